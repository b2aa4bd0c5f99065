/// Shell completion for bash, zsh and fish (`storelens --generate-completion-script SHELL`), made
/// from the same command configurations as help: every subcommand, each one's options, the
/// allowed values of an option that has them (`--format`), and files for the rest.
enum CompletionScripts {
    static let shells = ["bash", "zsh", "fish"]

    static func script(for shell: String, commands: [CommandConfiguration]) -> String? {
        switch shell {
        case "bash": return bash(commands)
        case "zsh": return zsh(commands)
        case "fish": return fish(commands)
        default: return nil
        }
    }

    /// Words quoted for a shell's single quotes (no configuration holds a quote; this keeps it so).
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func bash(_ commands: [CommandConfiguration]) -> String {
        var out = """
        # bash completion for storelens (storelens --generate-completion-script bash)
        _storelens() {
            local cur prev
            cur="${COMP_WORDS[COMP_CWORD]}"
            prev="${COMP_WORDS[COMP_CWORD-1]}"
            if [[ $COMP_CWORD -eq 1 ]]; then
                COMPREPLY=($(compgen -W \(quoted((commands.map(\.name) + ["help", "--help", "--version", "--generate-completion-script", "--generate-manual"]).joined(separator: " "))) -- "$cur"))
                return
            fi
            case "${COMP_WORDS[1]}" in
                help|--generate-manual) COMPREPLY=($(compgen -W \(quoted(commands.map(\.name).joined(separator: " "))) -- "$cur")); return ;;
                --generate-completion-script) COMPREPLY=($(compgen -W \(quoted(shells.joined(separator: " "))) -- "$cur")); return ;;

        """
        for c in commands {
            out += "        \(c.name))\n            case \"$prev\" in\n"
            for o in c.options where o.kind == .value {
                let names = o.names.joined(separator: "|")
                out += o.allowed.isEmpty
                    ? "                \(names)) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
                    : "                \(names)) COMPREPLY=($(compgen -W \(quoted(o.allowed.joined(separator: " "))) -- \"$cur\")); return ;;\n"
            }
            let flags = (c.options.flatMap(\.names) + ["--help"]).joined(separator: " ")
            out += "            esac\n"
            out += "            if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \(quoted(flags)) -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
            out += "            ;;\n"
        }
        out += """
            esac
        }
        complete -o filenames -o bashdefault -F _storelens storelens

        """
        return out
    }

    /// zsh's `_arguments` spec of one option: `'(-f --format)'{-f,--format}'[help]:format:(text json)'`.
    static func zshSpec(_ o: OptionSpec) -> String {
        let help = Help.text(o).replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
            .replacingOccurrences(of: ":", with: "\\:")
        let action: String
        if o.kind == .flag {
            action = ""
        } else if o.allowed.isEmpty {
            action = ":\(o.valueName):_files"
        } else {
            action = ":\(o.valueName):(\(o.allowed.joined(separator: " ")))"
        }
        let names = o.names.count == 1 ? o.names[0] : "{\(o.names.joined(separator: ","))}"
        let exclusion = o.names.count > 1 ? quoted("(\(o.names.joined(separator: " ")))") : ""
        let repeatable = o.repeatable ? "'*'" : ""
        return repeatable + exclusion + names + quoted("[\(help)]" + action)
    }

    static func zsh(_ commands: [CommandConfiguration]) -> String {
        var out = """
        #compdef storelens
        # zsh completion for storelens (storelens --generate-completion-script zsh)
        _storelens() {
            local -a subcommands
            subcommands=(

        """
        for c in commands { out += "        \(quoted(c.name + ":" + c.abstract.replacingOccurrences(of: ":", with: "\\:")))\n" }
        out += """
            )
            if (( CURRENT == 2 )); then
                _describe -t commands 'storelens subcommand' subcommands
                _arguments '--help[Show help information.]' '--version[Show the version.]' '--generate-completion-script[Print a completion script.]:shell:(\(shells.joined(separator: " ")))' '--generate-manual[Print a man page.]'
                return
            fi
            local command=${words[2]}
            shift 2 words
            (( CURRENT -= 2 ))
            case $command in

        """
        for c in commands {
            out += "        \(c.name))\n            _arguments -s \\\n"
            for o in c.options { out += "                \(zshSpec(o)) \\\n" }
            out += "                '--help[Show help information.]' \\\n"
            out += "                '*:input:_files'\n            ;;\n"
        }
        out += """
            help|--generate-manual) _describe -t commands 'storelens subcommand' subcommands ;;
            esac
        }
        _storelens "$@"

        """
        return out
    }

    static func fish(_ commands: [CommandConfiguration]) -> String {
        var out = "# fish completion for storelens (storelens --generate-completion-script fish)\n"
        let names = commands.map(\.name).joined(separator: " ")
        out += "complete -c storelens -n 'not __fish_seen_subcommand_from \(names) help' -f -a help -d 'Show help for a subcommand.'\n"
        out += "complete -c storelens -n 'not __fish_seen_subcommand_from \(names) help' -l version -d 'Show the version.'\n"
        out += "complete -c storelens -n 'not __fish_seen_subcommand_from \(names) help' -l generate-completion-script -x -a \(quoted(shells.joined(separator: " "))) -d 'Print a completion script.'\n"
        out += "complete -c storelens -n 'not __fish_seen_subcommand_from \(names) help' -l generate-manual -x -a \(quoted(names)) -d 'Print a man page.'\n"
        out += "complete -c storelens -n '__fish_seen_subcommand_from help' -f -a \(quoted(names))\n"
        for c in commands {
            out += "complete -c storelens -n 'not __fish_seen_subcommand_from \(names) help' -f -a \(c.name) -d \(quoted(c.abstract))\n"
            for o in c.options {
                var line = "complete -c storelens -n '__fish_seen_subcommand_from \(c.name)'"
                for name in o.names {
                    line += name.hasPrefix("--") ? " -l \(name.dropFirst(2))" : " -s \(name.dropFirst())"
                }
                if o.kind == .value {
                    line += o.allowed.isEmpty ? " -r -F" : " -x -a \(quoted(o.allowed.joined(separator: " ")))"
                }
                out += line + " -d \(quoted(o.help))\n"
            }
        }
        return out
    }
}
