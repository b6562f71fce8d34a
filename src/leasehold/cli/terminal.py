"""Text from the coordinator, made safe to print on a terminal.

Whatever an answer carries may hold characters a terminal acts on instead of showing: a
handler's error that quotes a producer's payload, a worker's host, a proxy's error page. ESC
starts escape sequences (clear the screen, set the title, write the clipboard with OSC 52),
U+009B is the same CSI in one character, and format characters such as U+202E reorder what
is shown. rich passes them through, and it reads ``[...]`` in a plain string as its own
markup (a ``[/bold]`` with nothing to close is an exception). So every string from an answer
is printed as ``Text`` (never markup) through ``safe``, which shows those characters as
escapes (``\\x1b``, ``\\u202e``), and ``--json`` escapes them as JSON does (``\\u001b``).
"""

from __future__ import annotations

import unicodedata
from typing import Final

from rich.style import Style
from rich.text import Text

# Control, format, line and paragraph separators, and lone surrogates (which no terminal
# can show): the characters a terminal may act on, or that hide or reorder text.
_UNSAFE: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _unsafe(char: str, lines: bool) -> bool:
    return unicodedata.category(char) in _UNSAFE and not (lines and char == "\n")


_SHORT: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe(text: str, *, lines: bool = False) -> str:
    """``text`` with every character a terminal could act on shown as an escape; with
    ``lines``, line breaks are kept (a traceback shown in full)."""
    if text.isprintable():  # nearly everything: no character of those categories at all
        return text
    return "".join(_escape(c) if _unsafe(c, lines) else c for c in text)


def plain(text: str, style: str | Style = "", *, lines: bool = False) -> Text:
    """``safe(text)`` as rich ``Text``: shown as it is, never read as markup or emoji."""
    return Text(safe(text, lines=lines), style=style)


def safe_json(text: str) -> str:
    """JSON text (``json.dumps``'s, which escapes only C0 controls in strings) with every
    other character ``safe`` would escape written as a JSON escape: the same JSON, with
    nothing in it a terminal acts on. Such characters can only be inside strings, where an
    escape means the same character; the line breaks of indented JSON are its own."""
    if text.isprintable():
        return text
    return "".join(_json_escape(c) if _unsafe(c, lines=True) else c for c in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the first plane: a surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
