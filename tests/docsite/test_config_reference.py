"""The configuration reference is read from the config models: every option is in it, with its YAML path, type,
default and description, and an option without a description fails here."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel, ConfigDict, Field

import proxy.config.settings
import scoring.settings
from docsite.config_reference import options, reference_markdown, sections, undocumented
from exporters.alertmanager import AlertmanagerSettings

pytestmark = pytest.mark.unit


def test_every_option_has_a_description() -> None:
    """The reference's "meaning" column comes from ``FieldInfo.description``: an option without one is
    undocumented. Give the field ``Field(description=...)`` (or an attribute docstring where the model
    reads them)."""
    missing = undocumented()
    assert missing == [], f"{len(missing)} of {len(options())} options have no description: {', '.join(missing)}"


def _config_models(module: object) -> set[type[BaseModel]]:
    return {
        value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        and value.__module__ == getattr(module, "__name__", None)
        and not name.startswith("_")
    }


def test_the_walk_reaches_every_config_model() -> None:
    """A model the walk misses (held by a type it does not follow) would be missing from the reference whole."""
    defined = _config_models(proxy.config.settings) | _config_models(scoring.settings) | {AlertmanagerSettings}
    assert defined - {section.model for section in sections()} == set()


def test_each_section_is_listed_with_every_place_it_sits() -> None:
    paths = {section.model.__name__: section.paths for section in sections()}
    assert paths["GatewaySettings"] == [""]
    assert paths["ApiKey"] == ["trustgate.keys[]"]
    assert paths["PolicySettings"] == ["trustgate.scoring.per_model.<name>", "trustgate.scoring.per_key.<name>"]
    assert paths["LowTrustPolicy"] == [
        "trustgate.scoring.on_low_trust",
        "trustgate.scoring.per_model.<name>.on_low_trust",
        "trustgate.scoring.per_key.<name>.on_low_trust",
    ]
    assert paths["BudgetLimits"] == ["trustgate.scoring.budget.per_model.<name>"]
    found = {option.path for option in options()}
    # read from LiteLLM's general_settings, though it is a field of the top-level model
    assert "general_settings.master_key" in found and "master_key" not in found
    assert {
        "trustgate.scoring.queue.max_size",
        "trustgate.alerting.alertmanager_url",
        "model_list[].litellm_params",
    } < found


def test_the_reference_has_a_row_for_every_option() -> None:
    markdown = reference_markdown()
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert sorted(row.split("`")[1] for row in rows) == sorted(option.path for option in options())


def _row(markdown: str, path: str) -> list[str]:
    row = next(line for line in markdown.splitlines() if line.startswith(f"| `{path}` |"))
    return [cell.strip() for cell in row.strip("|").split(" | ")]


def test_a_row_gives_the_type_its_bounds_and_the_default() -> None:
    markdown = reference_markdown()
    assert _row(markdown, "trustgate.scoring.queue.max_size")[1:3] == ["integer, ≥ 1", "`1000`"]
    assert _row(markdown, "trustgate.scoring.mode")[1:3] == ['one of `"sync"`, `"async"`, `"off"`', '`"async"`']
    assert _row(markdown, "trustgate.store.path")[1:3] == ["path or null", "`null`"]
    assert _row(markdown, "general_settings.master_key")[1:3] == ["secret string or null", "`null`"]
    assert _row(markdown, "model_list")[1:3] == ["list of [section](#model_list)", "required"]
    assert _row(markdown, "trustgate.alerting.alertmanager_url")[1] == "string or null, matching `^https?://`"
    assert (
        _row(markdown, "trustgate.scoring.per_key")[1]
        == "map of string to [section](#trustgate.scoring.per_model.name)"
    )
    assert "## `trustgate.scoring.per_model.<name>` {#trustgate.scoring.per_model.name}" in markdown
    assert "Also at `trustgate.scoring.per_key.<name>`." in markdown


class _Inner(BaseModel):
    """A section's docstring is its introduction."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    documented: int = Field(default=1, ge=0)
    """Said in an attribute docstring."""
    bare: str = "x"


class _Outer(BaseModel):
    inner: _Inner = Field(default_factory=_Inner, description="One section.")
    entries: list[_Inner] = Field(default_factory=list, description="A list of them.")
    by_name: dict[str, _Inner | None] = Field(default_factory=dict, description="Them by name | a pipe.")
    plain: float = Field(default=0.5, description="Said with Field(description=...).")


@pytest.mark.parametrize("style", ["attribute docstring", "Field(description=...)"])
def test_either_way_of_describing_a_field_counts_and_a_bare_one_is_reported(style: str) -> None:
    assert undocumented(_Outer) == ["inner.bare"]
    described = {option.path: option.description for option in options(_Outer)}
    if style == "attribute docstring":
        assert described["inner.documented"] == "Said in an attribute docstring."
    else:
        assert described["plain"] == "Said with Field(description=...)."


def test_a_model_held_in_lists_and_maps_is_one_section_with_every_path() -> None:
    found = {section.model: section.paths for section in sections(_Outer)}
    assert found[_Inner] == ["inner", "entries[]", "by_name.<name>"]
    markdown = reference_markdown(_Outer)
    assert markdown.count("| `inner.documented` |") == 1
    assert "A section's docstring is its introduction." in markdown
    assert "Them by name \\| a pipe." in markdown  # a pipe in a description does not split its row
