"""docs/configuration.md is generated from timem/settings.py (``python -m timem.settings_doc --write``): it lists
every section and setting with its type, default and doc comment, and this test fails when the two differ."""

from __future__ import annotations

from timem import settings_doc
from timem.settings import SECTION_OF, SECTIONS


def test_the_configuration_doc_is_the_settings_as_they_are():
    on_disk = settings_doc.DOC_PATH.read_text(encoding="utf-8")
    assert on_disk == settings_doc.render(), (
        "docs/configuration.md differs from timem/settings.py; run `python -m timem.settings_doc --write` and "
        "commit the result")


def test_every_setting_has_a_row_with_its_type_default_and_comment():
    text = settings_doc.render()
    rows = {line.split(" | ")[0].strip("| `"): line for line in text.splitlines() if line.startswith("| `")}
    assert set(rows) == set(SECTION_OF), set(rows) ^ set(SECTION_OF)
    assert all(f"## `[{name}]`" in text for name in SECTIONS)
    assert not [name for name, line in rows.items() if line.endswith("|  |")], "a setting without a #: comment"
    lam = rows["recall_lambda"]
    assert "`float`" in lam and "`0.2`" in lam and "TiMem: 0.9; 0.2 measured best here" in lam
    assert "`~/.cache/timem`" in rows["cache_dir"]  # not this machine's home folder
    assert "`Path \\| None`" in rows["local_model_path"]  # a | in a type does not split the table's cells


def test_comments_above_and_beside_a_field_are_joined():
    source = ("class S:\n"
              "    #: first line\n"
              "    #: second line\n"
              "    a: int = 1  #: beside\n"
              "    # a plain comment is not documentation\n"
              "    b: int = 2\n")
    assert settings_doc._doc_comments(source) == {("S", "a"): "first line second line beside", ("S", "b"): ""}
