#!/usr/bin/env python3
"""Transforms text. Reads its options as one JSON object on stdin."""
import json
import sys

if sys.argv[1:] == ["--help"]:
    print(json.dumps({"title": "Text transformer", "description": "Change the case of text and repeat it."}))
    print(json.dumps({
        "text": {"description": "Text to transform", "required": True, "type": "string"},
        "case": {"required": False, "type": {"enum": ["upper", "lower", "title"]}, "default": "upper"},
        "repeat": {"required": False, "type": "integer", "default": 1, "size": {"min": 1, "max": 5}},
        "separator": {"description": "Anything JSON; joined as text", "required": False, "value_type": "any",
                      "default_value": " "},
    }), file=sys.stderr)
    sys.exit(0)

options = json.load(sys.stdin)
text = getattr(options["text"], options["case"])()
print("DEBUG transforming %d characters" % len(text), file=sys.stderr)
print(json.dumps({"result": str(options["separator"]).join([text] * options["repeat"])}))
