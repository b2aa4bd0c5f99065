import WALForensics

extension RecordRecovery.Filter {
    /// `recover`'s `--entity`, `--pk` and `--state`: which versions to keep.
    init(_ parsed: ParsedArguments) throws(ParseError) {
        self.init(entity: parsed.value("--entity"))
        if let entity, entity.isEmpty { throw .invalid("--entity needs an entity name.") }
        if let text = parsed.value("--pk") {
            guard let pk = Int64(text), pk > 0 else { throw .invalid("The value '\(text)' is invalid for '--pk'; give a positive whole number (a Z_PK).") }
            self.pk = pk
        }
        let states = parsed.list("--state") ?? []
        if !states.isEmpty {
            var set: Set<RecordVersion.State> = []
            for name in states {
                guard let state = RecordVersion.State(rawValue: name.lowercased()) else {
                    throw .invalid("The value '\(name)' is invalid for '--state'; use live, superseded, deleted, uncommitted or carved.")
                }
                set.insert(state)
            }
            self.states = set
        }
    }
}
