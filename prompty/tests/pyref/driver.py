"""Loads and prepares every case of a manifest with the Python reference runtime (PyPI prompty,
pinned in requirements.txt) and prints the messages as JSON, for prompty/tests/python_reference.rs.

Usage: python driver.py MANIFEST.json > RESULTS.json

The manifest is a list of {"id", "path", "inputs"}. The result is a list of {"id", "default",
"loose"}, in the same order, where each of "default" and "loose" is {"messages"} or {"error"}:
"default" prepares the prompt as loaded (Python's strict mode is on unless the prompt sets
`format.strict: false`), "loose" with `template.format.strict` set to False. Messages are written in the shape both sides are compared in:
{"role", "parts": [{"kind": "text", "value"} | {"kind": "image"|"file"|"audio", "source",
"mediaType"?, "detail"?}], "metadata": {...}} (empty metadata left out).
"""

import json
import sys

import prompty
from prompty import AudioPart, FilePart, ImagePart, TextPart


def part(p):
    if isinstance(p, TextPart):
        return {"kind": "text", "value": p.value}
    kind = {ImagePart: "image", FilePart: "file", AudioPart: "audio"}.get(type(p))
    if kind is None:
        return {"kind": "unknown:" + type(p).__name__}
    out = {"kind": kind, "source": p.source}
    if getattr(p, "media_type", None) is not None:
        out["mediaType"] = p.media_type
    if getattr(p, "detail", None) is not None:
        out["detail"] = p.detail
    return out


def message(m):
    out = {"role": m.role, "parts": [part(p) for p in m.parts]}
    if m.metadata:
        out["metadata"] = m.metadata
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    results = []
    for case in cases:
        results.append(
            {
                "id": case["id"],
                "default": prepare(case, loose=False),
                "loose": prepare(case, loose=True),
            }
        )
    json.dump(results, sys.stdout, ensure_ascii=False, default=str)


def prepare(case, loose):
    try:
        agent = prompty.load(case["path"])
        if loose:
            # An omitted template (or part of one) is None in the reference's model.
            if agent.template is None:
                agent.template = prompty.Template()
            if agent.template.format is None:
                agent.template.format = prompty.FormatConfig(kind="jinja2")
            if agent.template.parser is None:
                agent.template.parser = prompty.ParserConfig(kind="prompty")
            agent.template.format.strict = False
        messages = prompty.prepare(agent, case["inputs"])
        return {"messages": [message(m) for m in messages]}
    except Exception as e:  # noqa: BLE001 - every failure is a result to compare
        return {"error": f"{type(e).__name__}: {e}"}


if __name__ == "__main__":
    main()
