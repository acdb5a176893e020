"""Reads the TypeScript subset the official ``schema.ts`` files are written in: each declaration's
members and their types, with the line each member is on. Test code only; no project imports.

The files are regular (interfaces, type aliases, unions, arrays, index signatures, literal types,
``typeof`` a constant): a construct outside that subset becomes an ``Opaque`` type, which the
comparison counts as skipped instead of guessing (holds no test).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# --- the types read ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prim:
    """A keyword type: ``string``, ``number``, ``boolean``, ``null``, ``undefined``, ``unknown``, …"""

    name: str


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal type: ``"2.0"``, ``-32700``, ``true``."""

    value: str | int | float | bool


@dataclass(frozen=True, slots=True)
class Ref:
    """A name: another declaration, a constant (``typeof``), a built-in generic (``Record<…>``)."""

    name: str
    args: tuple[TsType, ...] = ()
    typeof: bool = False


@dataclass(frozen=True, slots=True)
class Array:
    element: TsType


@dataclass(frozen=True, slots=True)
class Member:
    name: str
    type: TsType
    line: int
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Object:
    """An object literal type or an interface's body: named members and an index signature."""

    members: tuple[Member, ...]
    index: TsType | None = None
    index_line: int = 0


@dataclass(frozen=True, slots=True)
class Union:
    options: tuple[TsType, ...]


@dataclass(frozen=True, slots=True)
class Intersection:
    parts: tuple[TsType, ...]


@dataclass(frozen=True, slots=True)
class Opaque:
    """A construct outside the subset (a mapped type, an indexed access, ``keyof``)."""

    text: str


TsType = Prim | Lit | Ref | Array | Object | Union | Intersection | Opaque

PRIMITIVES = frozenset({"string", "number", "boolean", "null", "undefined", "unknown", "any", "object", "never"})


@dataclass(frozen=True, slots=True)
class Declaration:
    """An ``interface`` (its own body, and what it extends) or a ``type`` alias (its body)."""

    name: str
    kind: str  # "interface" | "type"
    body: TsType
    line: int
    extends: tuple[TsType, ...] = ()
    params: tuple[str, ...] = ()


@dataclass(slots=True)
class Module:
    """One ``schema.ts``: its declarations and its literal constants, by name."""

    path: Path
    declarations: dict[str, Declaration] = field(default_factory=dict)
    constants: dict[str, Lit] = field(default_factory=dict)
    lines: tuple[str, ...] = ()

    def line_text(self, number: int) -> str:
        return self.lines[number - 1].strip() if 0 < number <= len(self.lines) else ""


# --- tokens --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "name" | "string" | "number" | "punct"
    text: str
    line: int
    doc: str  # the JSDoc block right before this token, if any


_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<doc>/\*\*.*?\*/)
      | (?P<block>/\*.*?\*/)
      | (?P<comment>//[^\n]*)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)
      | (?P<number>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<name>[A-Za-z_$][\w$]*)
      | (?P<punct>=>|\.\.\.|[{}()\[\]<>;:,?|&=.\-])
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(source: str) -> Iterator[Token]:
    line, doc, position = 1, "", 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            raise SyntaxError(f"line {line}: unexpected {source[position : position + 20]!r}")
        kind, text = match.lastgroup or "", match.group()
        if kind == "doc":
            doc = text
        elif kind not in ("space", "block", "comment"):
            yield Token(kind, text, line, doc)
            doc = ""
        line += text.count("\n")
        position = match.end()


# --- the parser ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = list(tokens(source))
        self.at = 0

    def peek(self, ahead: int = 0) -> Token:
        index = self.at + ahead
        return self.tokens[index] if index < len(self.tokens) else Token("end", "", 0, "")

    def take(self, text: str | None = None) -> Token:
        token = self.peek()
        if text is not None and token.text != text:
            raise SyntaxError(f"line {token.line}: expected {text!r}, found {token.text!r}")
        self.at += 1
        return token

    def accept(self, text: str) -> bool:
        if self.peek().text == text and self.peek().kind in ("punct", "name"):
            self.at += 1
            return True
        return False

    def skip_balanced(self, opening: str, closing: str) -> str:
        """Past a bracketed group starting at ``opening``; its text, for an ``Opaque``."""
        depth, texts = 0, []
        while True:
            token = self.take()
            texts.append(token.text)
            depth += (token.text == opening) - (token.text == closing)
            if depth == 0 or token.kind == "end":
                return " ".join(texts)

    # Declarations ----------------------------------------------------------------------------

    def module(self, module: Module) -> Module:
        while self.peek().kind != "end":
            self.accept("export")
            keyword = self.take()
            if keyword.text == "interface":
                declaration = self.interface(keyword)
                module.declarations[declaration.name] = declaration
            elif keyword.text == "type":
                name, params = self.take().text, self.type_params()
                self.take("=")
                line = self.peek().line  # where the type itself starts (``JSONValue =`` breaks the line)
                module.declarations[name] = Declaration(
                    name=name, kind="type", body=self.union(), line=line, params=params
                )
                self.accept(";")
            elif keyword.text == "const":
                name = self.take().text
                self.take("=")
                value = self.primary()
                if isinstance(value, Lit):
                    module.constants[name] = value
                self.accept(";")
            else:
                raise SyntaxError(f"line {keyword.line}: unexpected {keyword.text!r} at the top level")
        return module

    def type_params(self) -> tuple[str, ...]:
        if self.peek().text != "<":
            return ()
        start = self.at
        self.skip_balanced("<", ">")
        inside = self.tokens[start + 1 : self.at - 1]
        return tuple(t.text for i, t in enumerate(inside) if t.kind == "name" and (i == 0 or inside[i - 1].text == ","))

    def interface(self, keyword: Token) -> Declaration:
        name, params = self.take().text, self.type_params()
        extends: list[TsType] = []
        if self.accept("extends"):
            extends.append(self.postfix())
            while self.accept(","):
                extends.append(self.postfix())
        body = self.object()
        return Declaration(
            name=name, kind="interface", body=body, line=keyword.line, extends=tuple(extends), params=params
        )

    # Types -------------------------------------------------------------------------------------

    def union(self) -> TsType:
        self.accept("|")
        options = [self.intersection()]
        while self.accept("|"):
            options.append(self.intersection())
        return options[0] if len(options) == 1 else Union(tuple(options))

    def intersection(self) -> TsType:
        parts = [self.postfix()]
        while self.accept("&"):
            parts.append(self.postfix())
        return parts[0] if len(parts) == 1 else Intersection(tuple(parts))

    def postfix(self) -> TsType:
        result = self.primary()
        while self.peek().text == "[":
            if self.peek(1).text == "]":
                self.at += 2
                result = Array(result)
            else:  # an indexed access type, T["key"]
                result = Opaque(self.skip_balanced("[", "]"))
        return result

    def primary(self) -> TsType:
        token = self.peek()
        if token.text == "(" and token.kind == "punct":
            self.take()
            inner = self.union()
            self.take(")")
            return inner
        if token.text == "{" and token.kind == "punct":
            return self.object()
        if token.text == "[" and token.kind == "punct":  # a tuple: an array, whatever its elements
            return Opaque(self.skip_balanced("[", "]"))
        self.take()
        if token.kind == "string":
            return Lit(token.text[1:-1]) if not token.text.startswith("`") or "${" not in token.text else Prim("string")
        if token.kind == "number":
            return Lit(_number(token.text))
        if token.text == "-" and self.peek().kind == "number":
            return Lit(-_number(self.take().text))
        if token.kind != "name":
            raise SyntaxError(f"line {token.line}: unexpected {token.text!r} in a type")
        return self.named(token)

    def named(self, token: Token) -> TsType:
        if token.text in ("true", "false"):
            return Lit(token.text == "true")
        if token.text in PRIMITIVES:
            return Prim(token.text)
        if token.text == "typeof":
            return Ref(self.dotted(self.take().text), typeof=True)
        if token.text in ("keyof", "readonly"):
            inner = self.postfix()
            return inner if token.text == "readonly" else Opaque(f"keyof {inner}")
        name, args = self.dotted(token.text), []
        if self.accept("<"):
            args.append(self.union())
            while self.accept(","):
                args.append(self.union())
            self.take(">")
        return Ref(name, tuple(args))

    def dotted(self, name: str) -> str:
        while self.peek().text == "." and self.peek(1).kind == "name":
            self.at += 1
            name += "." + self.take().text
        return name

    def object(self) -> Object:
        self.take("{")
        members: list[Member] = []
        index: TsType | None = None
        index_line = 0
        while not self.accept("}"):
            first = self.peek()
            self.accept("readonly")
            if self.peek().text == "[":
                if self.peek(2).text == "in":  # a mapped type: outside the subset
                    self.skip_balanced("[", "]")
                    self.accept("?")
                    self.take(":")
                    self.union()
                    index, index_line = Opaque("mapped type"), first.line
                else:
                    self.take("[")
                    self.take()
                    self.take(":")
                    self.union()
                    self.take("]")
                    self.take(":")
                    index, index_line = self.union(), first.line
            else:
                name = self.take()
                optional = self.accept("?")
                self.take(":")
                text = name.text[1:-1] if name.kind == "string" else name.text
                members.append(Member(text, self.union(), name.line, optional, first.doc or name.doc))
            if not self.accept(";"):
                self.accept(",")
        return Object(tuple(members), index, index_line)


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def parse(path: Path) -> Module:
    """The declarations of one ``schema.ts``."""
    source = path.read_text(encoding="utf-8")
    module = Module(path=path, lines=tuple(source.splitlines()))
    return _Parser(source).module(module)


def tjs_type(doc: str) -> str | None:
    """The JSON type a member's JSDoc tells the generator to emit (``@TJS-type number``), if any."""
    match = re.search(r"@TJS-type\s+(\w+)", doc)
    return match.group(1) if match else None
