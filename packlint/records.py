"""The one record mechanism: small classes without `dataclasses`. Importing dataclasses (and the
`inspect` module it pulls in) and generating each class's methods cost a cold `packlint check` ~15 ms,
a fifth of its budget. `@record` reads the annotations and builds a plain `__init__`, `__repr__` and,
when asked, `__eq__`/`__hash__` over the fields. Type checkers see it as a dataclass-like transform
(`typing.dataclass_transform`, declared only under TYPE_CHECKING, so nothing extra runs at start-up)
and so know each record's constructor; `factory(make)` is typed as returning what `make` returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar, overload

    from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
    _C = TypeVar("_C", bound=type)

    def factory(make: Callable[[], _T]) -> _T:
        """A default made fresh for each instance (like dataclasses' `field(default_factory=...)`)."""
        ...

else:

    class factory:
        """A default made fresh for each instance (like dataclasses' `field(default_factory=...)`)."""

        __slots__ = ("make",)

        def __init__(self, make) -> None:
            self.make = make


_MISSING = object()


if TYPE_CHECKING:

    @overload
    @dataclass_transform(eq_default=False)
    def record(cls: _C, /) -> _C: ...
    @overload
    @dataclass_transform(eq_default=False)
    def record(*, eq: bool = False) -> Callable[[_C], _C]: ...


def record(cls: Any = None, *, eq: bool = False) -> Any:
    def wrap(cls):
        names = tuple(n for c in reversed(cls.__mro__) for n in c.__dict__.get("__annotations__", {}))
        names = tuple(dict.fromkeys(names))
        defaults = {}
        for n in names:
            for c in cls.__mro__:
                if n in c.__dict__:
                    defaults[n] = c.__dict__[n]
                    break

        n_names = len(names)

        def __init__(self, *args, **kwargs):
            if not kwargs and len(args) == n_names:  # the common case: every field given
                self.__dict__.update(zip(names, args, strict=True))
                return
            if len(args) > n_names:
                raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, {len(args)} given")
            for n, v in zip(names, args, strict=False):
                self.__dict__[n] = v
            for n in names[len(args) :]:
                v = kwargs.pop(n, _MISSING)
                if v is _MISSING:
                    v = defaults.get(n, _MISSING)
                    if v is _MISSING:
                        raise TypeError(f"{cls.__name__}() missing argument {n!r}")
                    if type(v) is factory:
                        v = v.make()
                self.__dict__[n] = v
            if kwargs:
                raise TypeError(f"{cls.__name__}() got unexpected arguments {sorted(kwargs)}")

        def __repr__(self):
            return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

        cls.__init__ = __init__
        cls.__repr__ = __repr__
        cls._fields = names
        if eq:

            def __eq__(self, other):
                return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in names)

            def __hash__(self):
                return hash(tuple(getattr(self, n) for n in names))

            cls.__eq__ = __eq__
            cls.__hash__ = __hash__
        return cls

    return wrap if cls is None else wrap(cls)
