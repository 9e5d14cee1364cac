"""A small parser for the config language: `key = value` lines, [sections], # comments."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

SECTION = re.compile(r"^\[(?P<name>[A-Za-z0-9_.-]+)\]$")
ASSIGN = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")


class ParseError(ValueError):
    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"line {line_no}: {message}")
        self.line_no = line_no


@dataclass
class Section:
    name: str
    values: dict[str, object] = field(default_factory=dict)


def parse_value(raw: str, line_no: int) -> object:
    raw = raw.strip()
    if raw.startswith('"'):
        if not raw.endswith('"') or len(raw) == 1:
            raise ParseError(line_no, "unterminated string")
        return bytes(raw[1:-1], "utf-8").decode("unicode_escape")
    if raw in ("true", "false"):
        return raw == "true"
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise ParseError(line_no, "unterminated list")
        inner = raw[1:-1].strip()
        return [parse_value(item, line_no) for item in inner.split(",")] if inner else []
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        raise ParseError(line_no, f"cannot read value {raw!r}") from None


def lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.split("#", 1)[0].strip()
        if stripped:
            yield number, stripped


def parse(text: str) -> dict[str, Section]:
    sections: dict[str, Section] = {"": Section("")}
    current = sections[""]
    for line_no, line in lines(text):
        if match := SECTION.match(line):
            name = match["name"]
            if name in sections:
                raise ParseError(line_no, f"section [{name}] defined twice")
            current = sections[name] = Section(name)
            continue
        if match := ASSIGN.match(line):
            key = match["key"]
            if key in current.values:
                raise ParseError(line_no, f"key {key!r} set twice in [{current.name}]")
            current.values[key] = parse_value(match["value"], line_no)
            continue
        raise ParseError(line_no, f"expected a section or an assignment, got {line!r}")
    return sections
