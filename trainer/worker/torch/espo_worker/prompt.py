# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Rendering a protocol Prompt into the policy's input text.

render(prompt) returns (system, user): the system text describes the GUI-R1 answer
format and the action types of the step's stage; the user text holds the
instruction, the candidate item (recommend steps), the element tree, one line per
element `id role "text" [x1,y1,x2,y2] k=v ...`, and the demonstrated history, one
line per step `type point "input_text" on role "text"`. A real model wraps them in
its chat template (with the screenshot as an image turn for a VLM); the tiny model
uses plain_template, documented there.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import protocol as pb

NO_TEXT = "no input text"

_STAGE_ACTIONS = {
    pb.STAGE_GUI: (
        "This is a GUI step. Answer one of the actions click (point at the element), "
        "type (point at the field, input_text the text), scroll (input_text up, down, "
        "left or right), exit or complete (point [-100, -100])."),
    pb.STAGE_POOL: (
        "This is the item-pool step. Answer the action pool_found, point [-100, -100], "
        "with input_text the user's inferred need."),
    pb.STAGE_RECOMMEND: (
        "This is a decision step about the candidate item. Answer the action "
        "recommendation, point [-100, -100], with input_text Yes or No."),
}

SYSTEM = (
    "You are a GUI agent that helps a user with a vague request on a mobile app. "
    "Think briefly, then answer exactly one action in the format "
    "<think>...</think><answer>[{'action': 'click', 'point': [x, y], "
    "'input_text': 'no input text'}]</answer> with points normalised to [0, 1].")

_STAGE_NAMES = {pb.STAGE_GUI: "gui", pb.STAGE_POOL: "pool", pb.STAGE_RECOMMEND: "recommend"}


def _num(v: float) -> str:
    return ("%.3f" % v).rstrip("0").rstrip(".") if v == v else "nan"


def _attrs(m: Mapping[str, str]) -> str:
    return " ".join("%s=%s" % (k, m[k]) for k in sorted(m))


def element_line(e: pb.Element) -> str:
    box = "[" + ",".join(_num(v) for v in e.box) + "]"
    line = '%s %s "%s" %s' % (e.id, e.role, e.text, box)
    a = _attrs(e.attributes)
    return line + (" " + a if a else "")


def history_line(a: pb.Action) -> str:
    point = "[" + ", ".join(_num(v) for v in a.point) + "]"
    line = '%s %s "%s"' % (a.type, point, a.input_text or NO_TEXT)
    if a.element_id:
        line += ' on %s "%s"' % (a.element_role, a.element_text)
        at = _attrs(a.element_attributes)
        if at:
            line += " " + at
    return line


def stage_hint(prompt: pb.Prompt) -> str:
    return _STAGE_ACTIONS.get(prompt.stage, "")


def render(prompt: pb.Prompt) -> tuple[str, str]:
    """Returns (system, user) texts of a Prompt."""
    system = SYSTEM + " " + stage_hint(prompt)
    parts = ["Instruction: " + prompt.instruction]
    if prompt.HasField("item") and (prompt.item.id or prompt.item.title):
        it = prompt.item
        parts.append("Candidate item: %s %s" % (it.title, _attrs(it.attributes)))
    parts.append("Screen elements:")
    parts.extend(element_line(e) for e in prompt.elements)
    parts.append("History:" if prompt.history else "History: none")
    parts.extend("%d. %s" % (i + 1, history_line(a)) for i, a in enumerate(prompt.history))
    return system, "\n".join(parts)


def plain_template(prompt: pb.Prompt) -> str:
    """The tiny model's template, a compact plain text (no chat template):

        <stage>|<instruction>|<item title>|<element lines joined by ';'>|<history lines joined by ';'>|answer:

    The system text is left out: the tiny model learns the format from SFT alone.
    """
    item = prompt.item.title if prompt.HasField("item") else ""
    els = ";".join(element_line(e) for e in prompt.elements)
    hist = ";".join(history_line(a) for a in prompt.history)
    return "%s|%s|%s|%s|%s|answer:" % (_STAGE_NAMES.get(prompt.stage, "?"), prompt.instruction, item, els, hist)
