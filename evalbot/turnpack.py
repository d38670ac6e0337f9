"""The report models' speed machinery: a case's turns packed into one compact bytes object, and models built
without validation on the scoring hot path.  :mod:`evalbot.results` declares plain models and uses these.

A large run keeps the turns of every case that did not pass, for the PR comment.  As Python objects they cost
about 16 KB per 3-turn case (each tool call's arguments are a tree of small dicts, lists and strings); packed with
``marshal`` the same data is one bytes object of about 3 KB that is built faster than the objects it replaces.
The packed form lives only in memory (``marshal``'s format is specific to the Python version): reports are written
and read as JSON, where ``turns`` is a plain list of turns.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

CallRow = tuple[str | None, Any]
"""A tool call: name and arguments (JSON values)."""
TurnRow = tuple[str | None, str, str | None, str | None, list[CallRow] | None, list[CallRow]]
"""A turn: invocation id, user prompt, expected response, actual response, expected calls (None: no expected
conversation), actual calls."""

_VERSION = 4


def pack(rows: list[TurnRow]) -> bytes | list[TurnRow]:
    """The rows as bytes; values marshal cannot hold (not JSON-like, or nested too deep) keep the rows as they are."""
    try:
        return marshal.dumps(rows, _VERSION)
    except ValueError:
        return rows


def unpack(packed: bytes | list[TurnRow]) -> list[TurnRow]:
    """The rows given to :func:`pack` (as new objects when they were packed)."""
    if isinstance(packed, bytes):
        rows: list[TurnRow] = marshal.loads(packed)
        return rows
    return packed


# --- models built without validation ---

_M = TypeVar("_M", bound=BaseModel)
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}
_new = object.__new__
_set = object.__setattr__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
"""BaseModel's slots, set through their descriptors directly (no attribute lookup on each object)."""


def all_fields_set(obj: BaseModel) -> None:
    """Give ``obj`` the fields-set :func:`built` gives its class's objects (one shared set naming every field) in
    place of its own (a validated model's: 0.2-0.7 KB each). Its values and serialisation are unchanged; only
    ``model_dump(exclude_unset=True)`` would then keep fields left at their defaults."""
    _set_fields(obj, _every_field(type(obj)))


def _every_field(cls: type[BaseModel]) -> set[str]:
    fields = _ALL_FIELDS.get(cls)
    if fields is None:
        fields = _ALL_FIELDS[cls] = set(cls.model_fields)
    return fields


def built(cls: type[_M], values: dict[str, Any], fields: set[str] | None = None) -> _M:
    """What ``cls.model_construct(**values)`` does when ``values`` names every field, about twice as fast: no
    validation, and one fields-set shared by every object of the class (it names every field, so pydantic's
    bookkeeping on assignment or model_copy is a no-op on it), or ``fields`` (a set the caller shares between
    objects: pydantic copies it before changing it).  The caller guarantees the values are valid."""
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set_fields(obj, _every_field(cls) if fields is None else fields)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


# --- the turn models and their packed form ---


class ToolCallView(BaseModel):
    """A tool call as shown in reports: name and arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str | None
    args: Any = None


class TurnView(BaseModel):
    """What a reviewer needs to see of one turn: the prompt, expected vs actual calls and responses."""

    model_config = ConfigDict(extra="forbid")

    invocation_id: str | None = None
    user: str = ""
    expected_response: str | None = None
    actual_response: str | None = None
    expected_tool_calls: list[ToolCallView] | None = None
    actual_tool_calls: list[ToolCallView] = Field(default_factory=list)


def tool_call_view(name: str | None, args: Any) -> ToolCallView:
    """A ToolCallView built without validation."""
    return built(ToolCallView, {"name": name, "args": args})


def turn_view(
    invocation_id: str | None,
    user: str,
    expected_response: str | None,
    actual_response: str | None,
    expected_tool_calls: list[ToolCallView] | None,
    actual_tool_calls: list[ToolCallView],
) -> TurnView:
    """A TurnView built without validation."""
    return built(
        TurnView,
        {"invocation_id": invocation_id, "user": user, "expected_response": expected_response,
         "actual_response": actual_response, "expected_tool_calls": expected_tool_calls,
         "actual_tool_calls": actual_tool_calls},
    )


def _calls_of(views: Sequence[ToolCallView]) -> list[CallRow]:
    return [(v.name, v.args) for v in views]


def row_of(view: TurnView) -> TurnRow:
    """A turn's row, as packed."""
    expected = None if view.expected_tool_calls is None else _calls_of(view.expected_tool_calls)
    return (view.invocation_id, view.user, view.expected_response, view.actual_response, expected,
            _calls_of(view.actual_tool_calls))


def turn_from_row(row: TurnRow) -> TurnView:
    """The TurnView of a packed turn's row."""
    invocation_id, user, expected_response, actual_response, expected, actual = row
    return turn_view(
        invocation_id, user, expected_response, actual_response,
        None if expected is None else [tool_call_view(n, a) for n, a in expected],
        [tool_call_view(n, a) for n, a in actual],
    )


_T = TypeVar("_T")


class PackedMapping(Mapping[str, _T]):
    """A read-only mapping whose values are each kept as one ``marshal`` bytes object (built from validated values)
    and made again on each access, not kept (a parsed baseline's cases, compare.baseline.PackedCases, and their
    efficiency values, compare.efficiency.PackedValues). ``names``: the strings the rows refer to by index.
    Immutable like the values it stands for: copies are the object itself; equal to a dict of the same items."""

    __slots__ = ("_names", "_rows")

    def __init__(self, rows: dict[str, bytes], names: Sequence[str]) -> None:
        self._rows = rows
        self._names = names

    def _unpack(self, packed: bytes) -> _T:
        """The value packed in ``packed``."""
        raise NotImplementedError

    def __getitem__(self, key: str) -> _T:
        return self._unpack(self._rows[key])

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __eq__(self, other: object) -> bool:
        """Equal to a mapping of the same items, as ``Mapping``'s ``dict(self.items()) == dict(other.items())`` says,
        without building every value of both at once: the same rows are the same values; otherwise one value of
        each is built at a time, up to the first that differs."""
        if not isinstance(other, Mapping):
            return NotImplemented
        if type(other) is type(self) and other._names == self._names and other._rows == self._rows:
            return True
        if len(self) != len(other):
            return False
        return all(key in other and other[key] == value for key, value in self.items())

    def __copy__(self) -> PackedMapping[_T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PackedMapping[_T]:
        return self


def with_dict(model: _M, field: str) -> _M:
    """``model`` with its ``field`` (a PackedMapping) as a dict, for pydantic to serialise: a copy with its own
    ``__dict__`` (so its fields-set stays the parsed one's), or ``model`` itself when the field is a dict already."""
    value = model.__dict__[field]
    if isinstance(value, dict):
        return model
    copy = model.model_copy()
    copy.__dict__[field] = dict(value)
    return copy


class SpillStore(Protocol):
    """Where the packed forms of a kept case (its turns, its verdicts) may be written out of memory and read back
    from (:func:`spill`): the CLI and the Action give ``compare`` an anonymous temporary file (pipeline.PackedSpill); the core
    never opens one."""

    def put(self, data: bytes) -> int | None:
        """Keep ``data``; where it starts in the store, or None when it could not be written (then it stays held)."""

    def get(self, start: int, size: int) -> bytes:
        """The ``size`` bytes kept from ``start``."""


_SIZE_BITS = 40
"""A spilled packed form is one int: its bytes' start in the store << _SIZE_BITS | their size."""
_SIZE_MASK = (1 << _SIZE_BITS) - 1


class Packed(Sequence[_T]):
    """A read-only sequence kept in a packed form and rebuilt on each read (PackedTurns, results.PackedScores): a
    list's read-only behaviour, equal to a sequence of equal items, unhashable as a list. Copies are the object
    itself (nothing changes its items). Its packed bytes may be written to a SpillStore (:func:`spill`), and then
    only where they are is held."""

    __slots__ = ("_packed", "_store")

    _packed: bytes | list[Any] | int | None
    """The packed bytes; or what :func:`pack` could not pack; or, with ``_store``, where the bytes are there."""
    _store: SpillStore | None

    def _held(self) -> bytes | list[Any] | None:
        """The packed form, read back from the store when it was written there."""
        at = self._packed
        if isinstance(at, int):
            assert self._store is not None
            return self._store.get(at >> _SIZE_BITS, at & _SIZE_MASK)
        return at

    def __copy__(self) -> Packed[_T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Packed[_T]:
        return self

    def unpacked(self) -> list[_T]:
        """The items, built afresh."""
        raise NotImplementedError

    def same_packing(self, other: Packed[_T]) -> bool:
        """Whether ``other`` holds the same packed form (equal without unpacking either)."""
        return False

    def __iter__(self) -> Iterator[_T]:
        return iter(self.unpacked())

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...
    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        return self.unpacked()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Packed) and self.same_packing(other):
            return True
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.unpacked()!r})"


def spill(store: SpillStore, items: Iterable[Packed[Any]]) -> None:
    """Write the packed bytes of ``items`` (a kept case's turns and verdicts) to ``store`` as one piece, each item
    then holding only where its bytes are. Items not packed as bytes stay as they are, and all do when the store
    refuses the piece."""
    held = [(item, item._packed) for item in items if isinstance(item._packed, bytes)]
    if not held:
        return
    start = store.put(b"".join(data for _, data in held) if len(held) > 1 else held[0][1])
    if start is None:
        return
    for item, data in held:
        item._packed, item._store = start << _SIZE_BITS | len(data), store
        start += len(data)


class PackedTurns(Packed[TurnView]):
    """A case's turns, packed: a read-only sequence of TurnView built afresh on each read.

    As a pydantic field type it validates from a list of turns (models or dicts; errors located under the field),
    passes a PackedTurns through as it is, and serialises as the list of turns.  Two are equal when their turns
    are (equal turns may pack to different bytes, e.g. arguments' keys in another order).
    """

    __slots__ = ("_count", "_rows")

    def __init__(self, rows: list[TurnRow] | None = None, *, packed: bool = True) -> None:
        """``packed=False`` keeps the rows as they are until :meth:`compact` packs them: a case written out at once
        and dropped (``evalbot run`` streams its cases) never pays for packing and unpacking its turns."""
        self._rows = rows if rows and not packed else None
        self._packed = pack(rows) if rows and packed else None
        self._count = len(rows) if rows else 0
        self._store = None

    def compact(self) -> PackedTurns:
        """Pack the rows kept by ``packed=False`` (what holding the case for long needs); this object."""
        if self._rows is not None:
            self._packed, self._rows = pack(self._rows), None
        return self

    @classmethod
    def of(cls, views: Iterable[TurnView]) -> PackedTurns:
        """The turns of these views, packed."""
        return cls([row_of(v) for v in views])

    def rows(self) -> list[TurnRow]:
        """The turns' rows (new objects once packed; the rows given, not yet packed)."""
        if self._rows is not None:
            return list(self._rows)
        held = self._held()
        return unpack(held) if held is not None else []

    def __len__(self) -> int:
        return self._count

    def unpacked(self) -> list[TurnView]:
        return [turn_from_row(row) for row in self.rows()]

    def same_packing(self, other: Packed[TurnView]) -> bool:
        return (isinstance(other, PackedTurns) and self._rows is None and other._rows is None
                and self._held() == other._held())

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        views = handler.generate_schema(list[TurnView])

        def validate(value: Any, validate_views: core_schema.ValidatorFunctionWrapHandler) -> PackedTurns:
            if isinstance(value, PackedTurns):
                return value
            if not isinstance(value, list):
                raise PydanticCustomError("list_type", "turns must be a list of turns")
            return cls.of(validate_views(value))

        return core_schema.no_info_wrap_validator_function(
            validate, views, serialization=core_schema.plain_serializer_function_ser_schema(
                _turn_dicts, return_schema=_TURN_DICTS_SCHEMA
            )
        )


def dict_field(schema: CoreSchema, **default: Any) -> core_schema.TypedDictField:
    """A typed-dict field of a model's serialisation schema (with the model field's default, if any)."""
    return core_schema.typed_dict_field(core_schema.with_default_schema(schema, **default) if default else schema)


def optional_field(schema: CoreSchema) -> core_schema.TypedDictField:
    """A typed-dict field ``X | None = None``."""
    return dict_field(core_schema.nullable_schema(schema), default=None)


_CALL_DICT = core_schema.typed_dict_schema(
    {"name": dict_field(core_schema.nullable_schema(core_schema.str_schema())), "args": optional_field(core_schema.any_schema())}
)
_TURN_DICTS_SCHEMA = core_schema.list_schema(core_schema.typed_dict_schema({
    "invocation_id": optional_field(core_schema.str_schema()),
    "user": dict_field(core_schema.str_schema(), default=""),
    "expected_response": optional_field(core_schema.str_schema()),
    "actual_response": optional_field(core_schema.str_schema()),
    "expected_tool_calls": optional_field(core_schema.list_schema(_CALL_DICT)),
    "actual_tool_calls": dict_field(core_schema.list_schema(_CALL_DICT), default_factory=list),
}))
"""How the turns' dicts serialise: TurnView's and ToolCallView's fields and defaults as typed-dict fields, so
``exclude_none`` and ``exclude_defaults`` act on them as on the models."""


def _call_dicts(calls: list[CallRow]) -> list[dict[str, Any]]:
    return [{"name": name, "args": args} for name, args in calls]


def _turn_dicts(turns: PackedTurns) -> list[dict[str, Any]]:
    """The turns as ``TurnView.model_dump()`` writes each (same keys, same order), built from the rows without the
    view objects: a report is written without building two models per turn and one per tool call."""
    return [
        {"invocation_id": invocation_id, "user": user, "expected_response": expected_response,
         "actual_response": actual_response,
         "expected_tool_calls": None if expected is None else _call_dicts(expected),
         "actual_tool_calls": _call_dicts(actual)}
        for invocation_id, user, expected_response, actual_response, expected, actual in turns.rows()
    ]
