"""Reading a chat template as text: string literals, ``set`` variables, names it tests.

Detection uses this to see which markers a template spells and which switches it reads
without executing it (rendering, which needs jinja2, is the serving layer's job).
"""

from __future__ import annotations

import re

# Names every template uses that are never thinking switches.
_STANDARD_NAMES = frozenset(
    {
        "add_generation_prompt",
        "add_vision_id",
        "bos_token",
        "builtin_tools",
        "continue_final_message",
        "custom_tools",
        "date_string",
        "documents",
        "eos_token",
        "messages",
        "pad_token",
        "tool_choice",
        "tools",
        "tools_in_user_message",
        "unk_token",
    }
)


_TAG = re.compile(r"\{#.*?#\}|\{%-?(.*?)-?%\}|\{\{-?(.*?)-?\}\}", re.S)
_STR = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}
_SET = re.compile(r"^\s*set\s+(\w+)\s*=\s*(.+?)\s*$", re.S)
_DEFINED = re.compile(r"(?<![\w.\]'\"])([A-Za-z_]\w*)\s+is\s+(?:not\s+)?(?:defined|undefined)\b")
_LOOP_VARS = re.compile(r"\bfor\s+([\w\s,]+?)\s+in\b")
_MACRO = re.compile(r"\bmacro\s+\w+\s*\(([^)]*)\)")


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), s)


class TemplateText:
    """A template split into raw text and code, with its string literals resolved."""

    def __init__(self, text: str) -> None:
        self.text = text
        # (position, kind, content): kind "text" (raw output) or "code"
        self.parts: list[tuple[int, str, str]] = []
        pos = 0
        for m in _TAG.finditer(text):
            if m.start() > pos:
                self.parts.append((pos, "text", text[pos : m.start()]))
            code = m.group(1) if m.group(1) is not None else m.group(2)
            if code is not None:
                self.parts.append((m.start(), "code", code))
            pos = m.end()
        if pos < len(text):
            self.parts.append((pos, "text", text[pos:]))
        self.variables: dict[str, str] = {}
        for _, kind, code in self.parts:
            assignment = _SET.match(code) if kind == "code" else None
            if assignment:
                value = self._evaluate(assignment.group(2))
                if value is not None:
                    self.variables[assignment.group(1)] = value
        self.code = "\n".join(c for _, k, c in self.parts if k == "code")
        self.bare_code = _STR.sub("''", self.code)

    def _evaluate(self, expr: str) -> str | None:
        """A ``~``/``+`` concatenation of literals and known variables, else None."""
        out: list[str] = []
        for operand in re.split(r"\s*[~+]\s*", expr.strip()):
            m = _STR.fullmatch(operand)
            if m:
                out.append(_unescape(m.group(1) if m.group(1) is not None else m.group(2)))
            elif operand in self.variables:
                out.append(self.variables[operand])
            else:
                return None
        return "".join(out)

    def pieces(self, start: int = 0) -> list[str]:
        """Text the template can output from ``start`` on: raw text, each string literal,
        each referenced string variable, and each code block's literals joined (so that
        ``'<|open|>' ~ 'think'`` is seen whole)."""
        out: list[str] = []
        for pos, kind, content in self.parts:
            if pos < start:
                continue
            if kind == "text":
                out.append(content)
                continue
            lits: list[str] = []
            for m in _STR.finditer(content):
                lits.append(_unescape(m.group(1) if m.group(1) is not None else m.group(2)))
            bare = _STR.sub("''", content)
            for name in re.findall(r"(?<![\w.])([A-Za-z_]\w*)", bare):
                if name in self.variables:
                    lits.append(self.variables[name])
            out.extend(lits)
            if len(lits) > 1:
                out.append("".join(lits))
        return out

    def generation_prompt_start(self) -> int | None:
        """Where the last ``add_generation_prompt`` test is: what follows is the prompt tail."""
        last: int | None = None
        for pos, kind, content in self.parts:
            if kind == "code" and "add_generation_prompt" in content:
                last = pos
        return last

    def names_read(self) -> set[str]:
        """Free names tested with ``is defined`` (loop variables and macro params excluded)."""
        names = set(_DEFINED.findall(self.bare_code))
        for m in _LOOP_VARS.finditer(self.bare_code):
            names -= {n.strip() for n in m.group(1).split(",")}
        for m in _MACRO.finditer(self.bare_code):
            names -= {p.split("=")[0].strip() for p in m.group(1).split(",")}
        return names - _STANDARD_NAMES

    def mentions(self, name: str) -> bool:
        """``name`` is used as a free variable somewhere in the code."""
        return re.search(rf"(?<![\w.'\"]){re.escape(name)}\b", self.bare_code) is not None

    def bool_default(self, name: str) -> bool | None:
        """The value of a boolean kwarg when unset, if the template makes it plain."""
        n = re.escape(name)
        v = rf"(?<![\w.]){n}\b"
        found: set[bool] = set()
        for m in re.finditer(rf"\bset\s+{n}\s*=\s*(true|false)\b", self.bare_code, re.I):
            found.add(m.group(1).lower() == "true")
        for m in re.finditer(rf"{v}\s*\|\s*default\(\s*(true|false)\s*\)", self.bare_code, re.I):
            found.add(m.group(1).lower() == "true")
        off_test = rf"(?:not\s+{v}(?!\s*is\s)|{v}\s*(?:is\s+false|==\s*false|is\s+sameas\s+false))"
        on_test = (
            rf"(?:{v}\s*(?:is\s+true|==\s*true|is\s+sameas\s+true)|{v}(?!\s*(?:is|==|!=|\.|\[|\|)))"
        )
        if re.search(rf"{v}\s+is\s+defined\s+and\s+{off_test}", self.bare_code, re.I):
            found.add(True)
        if re.search(rf"{v}\s+is\s+defined\s+and\s+{on_test}", self.bare_code, re.I):
            found.add(False)
        if re.search(
            rf"(?:{v}\s+is\s+not\s+defined|not\s+{v}\s+is\s+defined)\s+or\s+{on_test}",
            self.bare_code,
            re.I,
        ):
            found.add(True)
        return found.pop() if len(found) == 1 else None
