#!/usr/bin/env python3
"""Writes each JSON Schema of SRC into DEST as one self-contained file: every schema it refers to
(by a relative `$ref` such as `finding.schema.json#/$defs/finding`, transitively) is embedded under
`$defs` with its own `$id`, which JSON Schema 2020-12 resolves without fetching anything. So a
single installed file validates offline with check-jsonschema, Python's jsonschema or ajv, with no
base URI to give. SRC keeps the schemas as written (one definition each, referring to each other).

    scripts/bundle-schemas.py schemas dist/.../schemas
"""
import json, os, re, sys

def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                m = re.match(r"^([A-Za-z0-9_.-]+\.schema\.json)", v)
                if m: yield m.group(1)
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node: yield from refs(v)

def main(src, dest):
    schemas = {f: json.load(open(os.path.join(src, f))) for f in sorted(os.listdir(src)) if f.endswith(".schema.json")}
    os.makedirs(dest, exist_ok=True)
    for name, schema in schemas.items():
        needed, todo = [], list(refs(schema))
        while todo:
            f = todo.pop(0)
            if f == name or f in needed: continue
            if f not in schemas: sys.exit(f"bundle-schemas.py: {name} refers to {f}, which is not in {src}")
            needed.append(f)
            todo += list(refs(schemas[f]))
        bundled = dict(schema)
        if needed:
            defs = dict(bundled.get("$defs", {}))
            for f in sorted(needed):
                key = "bundled:" + f
                embedded = dict(schemas[f]); embedded.pop("$schema", None)
                defs[key] = embedded
            bundled["$defs"] = defs
        with open(os.path.join(dest, name), "w") as out:
            json.dump(bundled, out, indent=2, ensure_ascii=False)
            out.write("\n")

if __name__ == "__main__":
    if len(sys.argv) != 3: sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
