from pathlib import Path

import orjson
import pytest

from scoring.factcheck.passages import Passage
from scoring.factcheck.sources import (
    CorpusError,
    parse_wordnet_line,
    read_user_corpus,
    validate_corpus_name,
    wikipedia_passages,
)

from .conftest import write_jsonl

pytestmark = pytest.mark.unit

SATELLITE = (
    "00020103 00 s 02 outback(a) 0 remote 0 003 & 00019874 a 0000 + 05085165 n 0202 "
    "+ 08505110 n 0101 | inaccessible and sparsely populated;  \n"
)


def test_a_wordnet_synset_becomes_its_words_and_gloss() -> None:
    assert parse_wordnet_line(SATELLITE) == Passage(
        "wordnet:s00020103", "outback", "outback, remote: inaccessible and sparsely populated;"
    )


def test_the_wordnet_licence_header_is_skipped() -> None:
    assert parse_wordnet_line("  1 This software and database is being provided to you, the LICENSEE\n") is None


def test_wikipedia_summaries_are_split_and_named_by_title(tmp_path: Path) -> None:
    summaries = {
        "Moon": {"title": "Moon", "extract": "The Moon orbits Earth. It is bright."},
        "Atom": {"title": "Atom", "extract": "An atom is small."},
    }
    path = tmp_path / "summaries.json"
    path.write_bytes(orjson.dumps(summaries))
    assert list(wikipedia_passages(path, max_words=4)) == [
        Passage("wikipedia:Atom", "Atom", "An atom is small."),
        Passage("wikipedia:Moon#0", "Moon", "The Moon orbits Earth."),
        Passage("wikipedia:Moon#1", "Moon", "It is bright."),
    ]


def test_a_jsonl_corpus_needs_only_text(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "notes.jsonl", [{"id": "a", "title": "A", "text": "Alpha."}, {"text": "Beta."}])
    assert list(read_user_corpus(path, "notes", 100)) == [
        Passage("notes:a", "A", "Alpha."),
        Passage("notes:2", "", "Beta."),
    ]


@pytest.mark.parametrize(("line", "message"), [(b"{not json", "not JSON"), (b'{"id": 1}', '"text" string')])
def test_a_bad_jsonl_line_is_reported_with_its_number(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "fine"}\n\n' + line + b"\n")
    with pytest.raises(CorpusError, match=rf"bad.jsonl:3: .*{message}"):
        list(read_user_corpus(path, "bad", 100))


def test_a_folder_corpus_reads_txt_files_by_relative_path(tmp_path: Path) -> None:
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "sub" / "rivers.txt").write_text("The Seine flows through Paris.")
    (tmp_path / "docs" / "ignored.md").write_text("Not a text file.")
    assert list(read_user_corpus(tmp_path / "docs", "mine", 100)) == [
        Passage("mine:sub/rivers", "rivers", "The Seine flows through Paris.")
    ]


def test_a_missing_corpus_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        list(read_user_corpus(tmp_path / "nowhere", "x", 100))


@pytest.mark.parametrize("name", ["wikipedia", "", "../up", "a b", "x" * 65])
def test_corpus_names_are_path_safe_and_not_reserved(name: str) -> None:
    with pytest.raises(CorpusError):
        validate_corpus_name(name)
