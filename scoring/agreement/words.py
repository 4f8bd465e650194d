"""Words as the agreement check reads them: their spelling, a folded form for matching, and a stem.

Names are matched on their folded spelling (case and accents folded, so "San
José" is "San Jose"); relation words on their stem, so that "wrote" in a
question finds "written" and "writer" in evidence. Stems are Snowball's
English stemmer's (snowballstemmer: pure Python, no data) after three readings
of WordNet, which
Debian's wordnet-base installs beside the glosses the corpus indexes:

* an irregular form is mapped to its lemma first (``verb.exc``: "wrote write");
* an agent noun to its verb ("writer" -> "write", "director" -> "direct"),
  where WordNet knows the verb (``index.verb``) and not the noun as a verb;
* a capitalised adjective ("Italian", "Japanese": ``index.adj``) followed by a
  common noun is marked, so that "Italian artist Leonardo" names Leonardo.

Without those files the Snowball stems alone are used and no word is marked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import snowballstemmer

__all__ = ["Lexicon", "Word", "fold", "read_lexicon", "sentences", "words"]

EXCEPTION_FILES = ("verb.exc", "noun.exc", "adj.exc")
AGENT_SUFFIXES = (("er", ""), ("er", "e"), ("or", ""), ("or", "e"))  # writer: write, director: direct

# A word: a number ("2,355", "3.5"), or letters and digits joined by an apostrophe, a hyphen or a dot inside
# it ("Port-au-Prince", "D.C", "d'Ivoire"); anything else (punctuation) is a word of its own, so clauses can be
# cut on it.
_TOKEN = re.compile(r"\d+(?:[,.]\d+)*|[^\W_]+(?:['’.\-][^\W_]+)*|[^\w\s]")
_POSSESSIVE = re.compile(r"['’]s$")
# A sentence ends at a full stop, "!" or "?" before a capital or a digit, but not after an initial or a short
# abbreviation ("D. W. Griffith", "K. 492", "St. Louis").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bNo\.)(?<!\bSt\.)(?<!\bMr\.)(?<!\bDr\.)\s+(?=[\"'(\[]?[A-Z0-9])"
)
_COMBINING_MARK = re.compile(r"[\u0300-\u036f]")


def fold(text: str) -> str:
    """Lower case, accents dropped, curly apostrophes straightened: the form names are compared in."""
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'").lower())
    return _COMBINING_MARK.sub("", decomposed)


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a text: as written, folded, its stem, and whether it is an adjective (WordNet's)."""

    text: str
    folded: str
    stem: str
    adjective: bool = False

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper()

    @property
    def is_number(self) -> bool:
        return self.text[:1].isdigit()

    @property
    def is_punctuation(self) -> bool:
        return not self.text[:1].isalnum()


class Lexicon:
    """What the check knows of English words: irregular forms, verbs and adjectives (see the module docstring)."""

    def __init__(
        self,
        irregular: dict[str, str] | None = None,
        verbs: Iterable[str] = (),
        adjectives: Iterable[str] = (),
    ) -> None:
        self._irregular = dict(irregular or {})
        self._verbs = frozenset(verbs)
        self.adjectives = frozenset(adjectives)
        self.stem = lru_cache(maxsize=1 << 16)(self._stem)

    def _lemma(self, folded: str) -> str:
        if folded in self._irregular:
            return self._irregular[folded]
        if folded not in self._verbs:
            for suffix, restored in AGENT_SUFFIXES:
                verb = folded.removesuffix(suffix) + restored
                if verb != folded + restored and len(verb) > 3 and verb in self._verbs:
                    return verb
        return folded

    def _stem(self, folded: str) -> str:
        # A stemmer keeps state while it stems: one per word, as threads may share the lexicon (memoised above).
        return str(snowballstemmer.stemmer("english").stemWord(self._lemma(folded)))


def _index_lemmas(path: Path) -> list[str]:
    """The single-word lemmas of a WordNet ``index.*`` file."""
    if not path.is_file():
        return []
    lemmas = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            lemma = line.split(" ", 1)[0]
            if not line.startswith(" ") and "_" not in lemma:
                lemmas.append(lemma)
    return lemmas


def read_lexicon(wordnet_dir: Path) -> Lexicon:
    """The lexicon from a WordNet folder; an empty one (Porter stems alone) where the files are not there."""
    irregular: dict[str, str] = {}
    for name in EXCEPTION_FILES:
        path = wordnet_dir / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                parts = line.split()
                if len(parts) >= 2 and "_" not in parts[0]:
                    irregular.setdefault(parts[0], parts[1])
    return Lexicon(irregular, _index_lemmas(wordnet_dir / "index.verb"), _index_lemmas(wordnet_dir / "index.adj"))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, as written."""
    return [sentence for sentence in _SENTENCE_END.split(text) if sentence.strip()]


def words(text: str, lexicon: Lexicon) -> list[Word]:
    """The words (and punctuation marks) of ``text``, in order; "Turkey's" is "Turkey" and "'s"."""
    found = []
    for match in _TOKEN.finditer(text):
        raw = match.group()
        possessive = _POSSESSIVE.search(raw)
        if possessive is not None and possessive.start() > 0:
            found += [_word(raw[: possessive.start()], lexicon), _word("'s", lexicon)]
        else:
            found.append(_word(raw, lexicon))
    return found


def _word(raw: str, lexicon: Lexicon) -> Word:
    folded = fold(raw)
    return Word(raw, folded, lexicon.stem(folded), folded in lexicon.adjectives)
