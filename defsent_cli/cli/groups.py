"""Option groups: options a command takes as a whole (the training loop's, the toolbox's, the model's), each
group declared once, each command naming the groups it takes rather than their members.

A :class:`Group` is an ordered table of :class:`Option` declarations. A command names it as one parameter whose
default is the group called with what differs for this command (a default, a help, a member left out)::

    @takes_groups
    def tsdae_command(sentences: opt.Sentences, ...,
                      loop: Values = LOOP(lr=change(3e-5, help="Learning rate (constant)."), without=("keep",))):
        config = loop_config(loop, pooling=...)

:func:`takes_groups` puts the group's members into the command's signature where the group stands (so Click parses
and ``--help`` lists each, in the group's order), and hands the command one :class:`Values` with them. An option's
check comes from its constraint (``constraints.py``): an integer range as click's ``min``/``max`` (shown by
``--help``), anything else as a callback in the library's words.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Annotated, Any

import typer

from ..constraints import Constraint, Interval

_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Option:
    """One member of a group: what Typer needs (or an ``annotation`` declared elsewhere, used as it is) and its
    constraint."""

    flags: tuple[str, ...] = ()
    type: Any = None
    help: str = ""
    default: Any = None
    show_default: bool = True
    envvar: str | None = None
    constraint: Constraint | None = None
    annotation: Any = None

    def typer_annotation(self) -> Any:
        """The ``Annotated`` Typer reads, its check derived from the constraint."""
        if self.annotation is not None:
            return self.annotation
        settings: dict[str, Any] = {"help": self.help}
        if not self.show_default:
            settings["show_default"] = False
        if self.envvar:
            settings["envvar"] = self.envvar
        rule = self.constraint
        if isinstance(rule, Interval) and rule.integer:  # click's IntRange: --help shows the range
            settings.update({k: int(v) for k, v in (("min", rule.low), ("max", rule.high)) if v is not None})
        elif rule is not None:
            from .options import constrained

            settings["callback"] = constrained(rule)
        return Annotated[self.type, typer.Option(*self.flags, **settings)]


def option(*flags: str, type: Any, help: str, default: Any = None, **more: Any) -> Option:
    """A member declared here: its flags, type, help, default (and ``show_default``, ``envvar``, ``constraint``)."""
    return Option(tuple(flags), type, help, default, **more)


def declared(annotation: Any, default: Any = None) -> Option:
    """A member that is an option declared elsewhere (``options.Seed``, ``options.Layers``), used as it is."""
    return Option(default=default, annotation=annotation)


def change(default: Any = _EMPTY, **fields: Any) -> dict[str, Any]:
    """What a command changes of one member: its default, and any of ``help``, ``type``, ``show_default``,
    ``annotation`` (another declaration of the same option, e.g. a command's own ``-m``)."""
    return fields if default is _EMPTY else {**fields, "default": default}


class Values(SimpleNamespace):
    """A group's values as a command receives them: ``values.lr``; ``dict(values)`` by name."""

    def __iter__(self):
        return iter(vars(self).items())


@dataclass(frozen=True)
class Taken:
    """A group as one command takes it: the members it takes, with its changes."""

    group: Group
    options: dict[str, Option]


class Group:
    """Options declared once, taken whole by the commands that name the group."""

    def __init__(self, name: str, options: dict[str, Option], constraints: dict[str, Constraint] | None = None):
        self.name = name
        # a member without its own constraint takes the table's (the loop's: training/config.py's CONSTRAINTS)
        self.options = {
            key: opt if opt.constraint is not None or not constraints else replace(opt, constraint=constraints.get(key))
            for key, opt in options.items()
        }

    def __call__(self, *, only: tuple[str, ...] | None = None, without: tuple[str, ...] = (), **changes: dict) -> Any:
        """The group as a command takes it: all members (or ``only`` these), ``without`` some, ``changes`` by
        member name (:func:`change`)."""
        names = [n for n in (only or self.options) if n not in without]
        unknown = sorted({*names, *without, *changes} - set(self.options))
        if unknown or set(changes) - set(names):
            raise ValueError(f"{self.name}: no member {unknown or sorted(set(changes) - set(names))}")
        return Taken(self, {n: replace(self.options[n], **changes.get(n, {})) for n in names})


def takes_groups(fn: Callable) -> Callable:
    """Put the members of each group ``fn`` takes into its signature where the group stands, and hand ``fn`` the
    group's :class:`Values` under the group parameter's name."""
    signature = inspect.signature(fn, eval_str=True)
    params, groups = [], {}
    own = {name for name, p in signature.parameters.items() if not isinstance(p.default, Taken)}
    for param in signature.parameters.values():
        if not isinstance(param.default, Taken):
            params.append(param)
            continue
        clash = own & set(param.default.options)
        if clash:
            raise ValueError(f"{fn.__name__}: {sorted(clash)} both its own and group {param.default.group.name}'s")
        groups[param.name] = tuple(param.default.options)
        params += [
            inspect.Parameter(name, param.kind, default=member.default, annotation=member.typer_annotation())
            for name, member in param.default.options.items()
        ]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, members in groups.items():
            kwargs[name] = Values(**{member: kwargs.pop(member) for member in members})
        return fn(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)
    return wrapper
