"""One shape of policy verbs, ``set-`` / ``get-`` / ``remove-<suffix>``,
built for a namespace or topic group from a :class:`PolicyVerbs`: which
options set which fields (read as :data:`policy_fields.FIELDS` says),
which fields ``get-`` shows and ``remove-`` unsets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from .broker_options import broker_options, opened
from .policy_fields import FIELDS, check_driver, check_file_system, show_policies

# The broker loads when a verb opens it, not to parse the options.
if TYPE_CHECKING:
    from ..managed_ledger import Broker

__all__ = ["PolicyVerbs", "Setting", "add_policy_verbs"]


@dataclass(frozen=True)
class Setting:
    """A ``set-`` verb's option or argument and the policy field it sets;
    errors name it as ``what`` (by default its long flag)."""

    param: click.Parameter
    field: str
    what: str = ""

    @property
    def error_name(self) -> str:
        return self.what or self.param.opts[-1]

    def given(self, values: dict[str, Any]) -> Any:
        """This setting's value among a command's parameters (``None``: not given)."""
        return values[str(self.param.name)]


def _show_changed(broker: Broker, level: str, name: str, key: str, changes: dict[str, Any]) -> None:
    show_policies(broker, level, key, [field for field in FIELDS if field in changes], as_json=False)


def _show_fields(fields: tuple[str, ...]) -> Callable[[Broker, str, str, bool], None]:
    def show(broker: Broker, level: str, key: str, as_json: bool) -> None:
        show_policies(broker, level, key, list(fields), as_json)

    return show


@dataclass(frozen=True)
class PolicyVerbs:
    """The three verbs of one group of settings. Help texts take
    ``{label}`` (the level, upper case); ``remove-`` says
    "``{removed}`` removed". ``set-`` shows the fields it changed unless
    ``report`` says otherwise, ``get-`` shows ``fields`` unless ``show``
    does; ``missing`` is the usage error of a ``set-`` given nothing (one
    whose argument or option is required is never given nothing)."""

    suffix: str
    set_help: str
    get_help: str
    remove_help: str
    removed: str
    fields: tuple[str, ...]
    settings: tuple[Setting, ...]
    missing: str = "give the settings to change (see --help)"
    report: Callable[[Broker, str, str, str, dict[str, Any]], None] = _show_changed
    show: Callable[[Broker, str, str, bool], None] | None = None


def add_policy_verbs(group: click.Group, level: str, parse_name: Callable[[str], str], verbs: PolicyVerbs) -> None:
    """Add ``verbs``' set-, get- and remove- commands for ``level`` to
    ``group``; ``parse_name`` gives the stored name of the command's
    argument (:class:`ConfigError` for a malformed one)."""
    label = level.upper()
    show = verbs.show or _show_fields(verbs.fields)

    def set_settings(name: str, data_dir: str, config_path: str | None, **given: Any) -> None:
        changes = {
            setting.field: FIELDS[setting.field].read(setting.given(given), setting.error_name)
            for setting in verbs.settings
            if setting.given(given) is not None
        }
        if not changes:
            raise click.UsageError(verbs.missing)
        check_file_system(changes)
        with opened(data_dir, config_path) as broker:
            check_driver(broker, changes.get("driver"))
            key = parse_name(name)
            broker.policies.update(level, key, **changes)
            verbs.report(broker, level, name, key, changes)

    def get_settings(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show(broker, level, parse_name(name), as_json)

    def remove_settings(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(verbs.fields))
            click.echo(f"{level} {name}: {verbs.removed} removed")

    named = click.Argument(["name"], metavar=label)
    as_json = click.Option(["--json", "as_json"], is_flag=True)
    for verb, help_text, params, callback in (
        ("set", verbs.set_help, [named, *(setting.param for setting in verbs.settings)], set_settings),
        ("get", verbs.get_help, [named, as_json], get_settings),
        ("remove", verbs.remove_help, [named], remove_settings),
    ):
        group.command(f"{verb}-{verbs.suffix}", help=help_text.format(label=label), params=params)(
            broker_options(callback)
        )
