import pytest

from scoring.factcheck.text import evidence_query, split_passages, tokenize

pytestmark = pytest.mark.unit


def test_tokenize_folds_case_accents_and_plurals_and_drops_stop_words() -> None:
    assert tokenize("The Capitals of Île-de-France are CITIES") == ["capital", "ile", "de", "france", "city"]


def test_tokenize_keeps_numbers_and_non_latin_words() -> None:
    assert tokenize("In 1903, Skłodowska won; 東京 is Tokyo") == ["1903", "skłodowska", "won", "東京", "tokyo"]


def test_evidence_query_is_the_papers_template() -> None:
    assert evidence_query("Who wrote Hamlet?", "Shakespeare wrote Hamlet.") == (
        '"Shakespeare wrote Hamlet." correctly answers the question of "Who wrote Hamlet?"'
    )


def test_passages_keep_whole_sentences_within_the_word_limit() -> None:
    text = "One two three. Four five six. Seven eight nine ten. Eleven."
    assert split_passages(text, max_words=7) == ["One two three. Four five six.", "Seven eight nine ten. Eleven."]


def test_a_sentence_longer_than_the_limit_is_cut() -> None:
    words = [f"w{i}" for i in range(25)]
    assert split_passages(" ".join(words) + ".", max_words=10) == [
        " ".join(words[:10]),
        " ".join(words[10:20]),
        " ".join(words[20:]) + ".",
    ]


def test_short_text_is_one_passage_with_whitespace_normalised() -> None:
    assert split_passages("  Paris is\n the capital.  ") == ["Paris is the capital."]
    assert split_passages("   ") == []
