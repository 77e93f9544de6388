"""Text shown to people: a message that quotes user input, as one printable line."""

from __future__ import annotations


def one_line(text: str) -> str:
    """A refusal's message as one printable line: user input quoted in it (a file name, a
    directory, a field name) may hold a newline or another control character, shown escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
