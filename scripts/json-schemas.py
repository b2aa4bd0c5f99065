#!/usr/bin/env python3
"""The JSON Schemas of storelens's JSON output (schemas/), checked with the `jsonschema` package.

    json-schemas.py check                      every schema is a valid draft 2020-12 schema
    json-schemas.py validate NAME FILE...      each FILE is one document of schema NAME
    json-schemas.py validate-lines NAME FILE...  each line of each FILE is one NAME
    json-schemas.py which ARG...               the schema of `storelens ARG...`'s stdout
    json-schemas.py spool DIR                  every run the tests recorded in DIR (scripts/test.sh)

A schema's name is its file's without `.schema.json`. Schemas refer to each other by relative
`$ref` (`finding.schema.json#/$defs/finding`); every file of schemas/ is in the registry.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(os.path.dirname(HERE), "schemas")
BASE = "https://storelens.invalid/schemas/"

try:
    import jsonschema
    from referencing import Registry, Resource
except ImportError as error:  # the caller makes the venv; say what is missing
    sys.exit(f"json-schemas.py: {error} (run it with a Python that has jsonschema installed)")


def load_all():
    schemas = {}
    for name in sorted(os.listdir(SCHEMAS)):
        if name.endswith(".schema.json"):
            with open(os.path.join(SCHEMAS, name), encoding="utf-8") as f:
                schemas[name[: -len(".schema.json")]] = json.load(f)
    return schemas


def registry(schemas):
    return Registry().with_resources(
        (BASE + name + ".schema.json", Resource.from_contents(schema)) for name, schema in schemas.items()
    )


def validator(schemas, name):
    if name not in schemas:
        raise SystemExit(f"json-schemas.py: no schema {name!r} in {SCHEMAS}")
    return jsonschema.Draft202012Validator(schemas[name], registry=registry(schemas),
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def problems(check, document, where):
    found = []
    for error in sorted(check.iter_errors(document), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in error.absolute_path) or "(the document)"
        found.append(f"{where}: at {path}: {error.message[:300]}")
    return found


def check_schemas(schemas):
    found = []
    for name, schema in schemas.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            found.append(f"{name}: not a valid draft 2020-12 schema: {error.message}")
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            found.append(f"{name}: $schema is not draft 2020-12")
        if schema.get("$id") != BASE + name + ".schema.json":
            found.append(f"{name}: $id is not {BASE + name + '.schema.json'}")
    # Every $ref must resolve: validating an empty object walks no refs, so resolve them here.
    reg = registry(schemas)
    for name, schema in schemas.items():
        resolver = reg.resolver(base_uri=BASE + name + ".schema.json")
        for ref in refs(schema):
            try:
                resolver.lookup(ref)
            except Exception as error:  # referencing's errors have no common public base
                found.append(f"{name}: $ref {ref!r} does not resolve ({type(error).__name__})")
    return found


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def option(arguments, *names):
    for i, argument in enumerate(arguments):
        for name in names:
            if argument == name and i + 1 < len(arguments):
                return arguments[i + 1]
            if argument.startswith(name + "="):
                return argument[len(name) + 1:]
    return None


def which(arguments):
    """(schema, shape) of the stdout of `storelens arguments`: shape is "document", "lines" or
    "array" (a JSON array of the schema's items); None when stdout is not JSON."""
    command = next((a for a in arguments if not a.startswith("-")), None)
    form = option(arguments, "--format", "-f")
    if command is None or form not in ("json", "jsonl", "array"):
        return None
    diff = "--diff" in arguments
    table = {
        ("inspect", "json"): "inspect", ("scan", "json"): "scan", ("schema", "json"): "schema",
        ("rows", "json"): "rows", ("rows", "jsonl"): "rows-line", ("rows", "array"): "rows-line",
        ("history", "json"): "history", ("history", "jsonl"): "history-line",
        ("timeline", "jsonl"): "timeline-line",
        ("recover", "json"): "recover", ("recover", "jsonl"): "recover-line",
        ("export", "json"): "export",
        ("check", "json"): "check", ("audit", "json"): "audit", ("migration", "json"): "migration",
        ("lint", "json"): "lint", ("repair", "json"): "repair", ("merge", "json"): "merge",
        ("wal", "json"): "wal-diff" if diff else "wal", ("wal", "jsonl"): "wal-diff-line" if diff else None,
    }
    name = table.get((command, form))
    if name is None:
        return None
    return name, {"json": "document", "jsonl": "lines", "array": "array"}[form]


def validate_text(schemas, name, shape, text, where):
    check = validator(schemas, name)
    found = []
    if shape == "document":
        try:
            document = json.loads(text)
        except ValueError as error:
            return [f"{where}: not JSON ({error})"]
        found += problems(check, document, where)
    elif shape == "array":
        try:
            items = json.loads(text)
        except ValueError as error:
            return [f"{where}: not JSON ({error})"]
        if not isinstance(items, list):
            return [f"{where}: not a JSON array"]
        for i, item in enumerate(items):
            found += problems(check, item, f"{where} item {i}")
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except ValueError as error:
                found.append(f"{where} line {number}: not JSON ({error})")
                continue
            found += problems(check, document, f"{where} line {number}")
    return found


def complete(text, shape):
    try:
        if shape == "lines":
            for line in text.splitlines():
                if line.strip():
                    json.loads(line)
        else:
            json.loads(text)
        return True
    except ValueError:
        return False


def spool(schemas, folder):
    """Each file of `folder` is one run the tests made: {"arguments", "status", "stdout",
    "jsonl"} (`jsonl`: the batch results file after the run, when `--jsonl` was given)."""
    found, runs, documents = [], 0, 0
    counts = {}
    for entry in sorted(os.listdir(folder)):
        with open(os.path.join(folder, entry), encoding="utf-8") as f:
            run = json.load(f)
        runs += 1
        arguments = run["arguments"]
        where = "storelens " + " ".join(arguments)[:200]
        target = which(arguments)
        if target and run["stdout"].strip() and run.get("status", 0) not in (0, 1) and not complete(run["stdout"], target[1]):
            # A command that fails part-way (exit 2 or 3) may have streamed the start of its
            # document; only what it finished is held to the schema.
            target = None
        if target and run["stdout"].strip():
            if target[0] not in schemas:
                found.append(f"{where}: no schema {target[0]!r} in schemas/ for this output")
                continue
            found += validate_text(schemas, target[0], target[1], run["stdout"], where)
            counts[target[0]] = counts.get(target[0], 0) + 1
            documents += 1
        if run.get("jsonl"):
            found += validate_text(schemas, "batch-line", "lines", run["jsonl"], where + " (its --jsonl file)")
            counts["batch-line"] = counts.get("batch-line", 0) + 1
            documents += 1
    return found, runs, documents, counts


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    schemas = load_all()
    action = argv[1]
    if action == "check":
        found = check_schemas(schemas)
        print(f"json-schemas.py: {len(schemas)} schemas" + ("" if found else ", all valid draft 2020-12"))
    elif action in ("validate", "validate-lines"):
        name = argv[2]
        found = []
        for path in argv[3:]:
            with open(path, encoding="utf-8") as f:
                found += validate_text(schemas, name, "document" if action == "validate" else "lines", f.read(), path)
    elif action == "which":
        target = which(argv[2:])
        print(json.dumps(target))
        return 0
    elif action == "spool":
        found, runs, documents, counts = spool(schemas, argv[2])
        found = check_schemas(schemas) + found
        print(f"json-schemas.py: {documents} JSON outputs of {runs} recorded runs validated against their schemas"
              f" ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
    else:
        sys.exit(__doc__)
    for line in found[:200]:
        print(line, file=sys.stderr)
    if len(found) > 200:
        print(f"… and {len(found) - 200} more", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
