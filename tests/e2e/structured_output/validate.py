"""Validates structured outputs against their JSON Schemas with the
independent `jsonschema` package (Debian's python3-jsonschema).

Usage: python3 validate.py CASES.json
CASES.json: [{"schema": {...}, "output": "<text the server returned>",
              "draft": 4 (optional; default 2020-12)}]
Prints one line per case: "ok" or "FAIL <index>: <why>"; exits 1 when any
case fails, 2 when jsonschema is missing.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("jsonschema is not installed (apt install python3-jsonschema)")
    sys.exit(2)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    failed = 0
    for i, case in enumerate(cases):
        try:
            instance = json.loads(case["output"])
            cls = (jsonschema.Draft4Validator if case.get("draft") == 4
                   else jsonschema.Draft202012Validator)
            validator = cls(case["schema"],
                            format_checker=jsonschema.FormatChecker())
            errors = [e.message for e in validator.iter_errors(instance)]
            if errors:
                raise ValueError("; ".join(errors))
            print("ok")
        except Exception as e:  # noqa: BLE001 - report every failure
            failed += 1
            print(f"FAIL {i}: {e}: {case['output']!r}")
    sys.exit(1 if failed else 0)


main()
