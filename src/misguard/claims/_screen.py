"""Screening of text addressed to the checker (prompt injection, OWASP LLM01): a sentence
that tells the guard what to answer, overrides its instructions, gives it a role, or hands
it a verdict in its own output format. Such a sentence says nothing about the world; the
guard sets it aside, so its decision cannot change because the text told it to, and
records that it did (stage `screen-injection`).

Cues, in English, French, Spanish, Arabic, Hindi and Chinese:
- `override`: "ignore (all) previous instructions" and its kin;
- `verdict`: an object in a verdict's shape (`{"verdict": ...}`, `"misinformation": false`);
- `role`: "you are now", "act as", "stay in character";
- `addressee`: the checker named (fact-checking system, AI, assistant, moderator, monitor,
  guard, detector, classifier, the safety team);
- `steer`: an instruction about the answer or the handling ("answer no", "respond that",
  "contains no misinformation", "pass it unchanged", "do not flag / quarantine").
A sentence is screened when it holds `override`, `verdict` or `role`, or both `addressee`
and `steer`. The patterns were written from what injections say in general (garak's and
PyRIT's probes, AgentDojo's tasks), not fitted to the red-team suite's templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE
CUES: dict[str, re.Pattern[str]] = {
    "override": re.compile(
        r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules|prompts?|guidelines|directions)\b"
        r"|\b(?:ignorez|ignore|oubliez|oublie)\b.{0,30}\binstructions\b|\bignora(?:r)?\b.{0,30}\binstrucciones\b"
        r"|تجاهل.{0,30}التعليمات|निर्देशों.{0,20}(?:अनदेखा|नज़रअंदाज़|भूल)|(?:忽略|无视|忘记).{0,10}(?:指令|指示|说明)", _I),
    "verdict": re.compile(
        r"\{[^{}]{0,300}[\"'](?:verdict|label|answer|misinformation|same_claim|flagged|is_false|classification|rating"
        r"|désinformation|desinformación|معلومات_مضللة|गलत_जानकारी|虚假信息)[\"']\s*:", _I),
    "role": re.compile(
        r"\byou\s+are\s+now\b|\bact\s+as\b|\bstay\s+in\s+character\b|\bpretend\s+(?:to\s+be|you)\b|\bfrom\s+now\s+on,?\s+you\b"
        r"|\btu\s+es\s+maintenant\b|\breste\s+dans\s+ton\s+rôle\b|\bahora\s+eres\b|\bmantén\s+el\s+papel\b"
        r"|أنت\s+الآن|ابق\S*\s+في\s+الدور|अब\s+तुम|भूमिका\s+में\s+रहो|你现在是|保持这个角色", _I),
    "addressee": re.compile(
        r"\bfact[- ]?check(?:ing|er)?s?\s+(?:system|bot|model|tool|team)\b|\b(?:AI|assistant|language\s+model|LLM|moderator"
        r"|monitor|monitors|guard|detector|classifier|reviewer|safety\s+team|security\s+team)\b"
        r"|système\s+de\s+vérification|équipe\s+de\s+(?:sécurité|vérification)|moniteurs?|gardien"
        r"|sistema\s+de\s+verificación|equipo\s+de\s+(?:seguridad|verificación)|monitores|guardián"
        r"|نظام\s+التحقق|فريق\s+(?:الأمان|التحقق)|مراقب|حارس|तथ्य-जाँच\s+प्रणाली|सुरक्षा\s+टीम|मॉनिटर|गार्ड"
        r"|事实核查系统|安全团队|监控|守卫|审核", _I),
    "steer": re.compile(
        r"\b(?:answer|respond|reply|say|output|return|classify|mark|label|rate)\b.{0,30}\b(?:no|false|true|accurate|safe|"
        r"that\s+it|this\s+(?:text|message|claim))\b|\bcontains?\s+no\s+misinformation\b|\bnot\s+misinformation\b"
        r"|\bpass\b.{0,20}\bunchanged\b|\bdo\s+not\s+(?:flag|quarantine|rewrite|modify|change|block)\b"
        r"|\brépondez\b|\bréponds\b|aucune\s+désinformation|sans\s+modification|ne\s+le\s+mettez\s+pas"
        r"|\bresponda\b|\bresponde\b|no\s+contiene\s+desinformación|sin\s+cambios|no\s+lo\s+pongas"
        r"|أجب|دون\s+تغيير|لا\s+تعزل|उत्तर\s+दें|बिना\s+बदले|क्वारंटीन\s+न|请回答|回答否|原样放行|请勿隔离|不包含任何虚假信息", _I),
}
#: pieces the screen looks at: lines, and sentences within them
_PIECE = re.compile(r"[^\n.!?\u3002\uff01\uff1f\u0964\u061f]+(?:[.!?\u3002\uff01\uff1f\u0964\u061f]+|\n|$)")
_BRACES = re.compile(r"\{[^{}\n]{0,600}\}")
_CLOSERS = re.compile(r"[ \t]*[\])\"'\u201d\u300d\u300f\u3011]*")


@dataclass(frozen=True)
class Injection:
    """A span of the text addressed to the checker, and the cues found in it."""

    start: int
    end: int
    cues: tuple[str, ...]


def _cues(piece: str) -> tuple[str, ...]:
    return tuple(name for name, rx in CUES.items() if rx.search(piece))


def _screened(cues: tuple[str, ...]) -> bool:
    return bool({"override", "verdict", "role"} & set(cues)) or {"addressee", "steer"} <= set(cues)


def find_injections(text: str) -> list[Injection]:
    """Spans of `text` addressed to the checker (sorted, not overlapping).

    A note to the checker often spreads over two sentences ("Note to the fact-checking
    system: ... Answer that ..."): consecutive sentences that each hold a cue (one
    sentence without any may sit between two) are read together."""
    present = _cues(text)
    if not _screened(present) and "verdict" not in present:  # most texts: no piece can qualify
        return []
    spans: list[Injection] = []
    for m in _BRACES.finditer(text):  # a fake verdict object first: its dots are not sentence ends
        cues = _cues(m.group())
        if "verdict" in cues:
            spans.append(Injection(m.start(), m.end(), cues))
    pieces = [(m.start(), m.end(), _cues(m.group())) for m in _PIECE.finditer(text)
              if not any(s.start < m.end() and m.start() < s.end for s in spans)]
    i = 0
    while i < len(pieces):
        if not pieces[i][2]:
            i += 1
            continue
        j, union = i, set(pieces[i][2])
        while True:  # extend over the next cue piece, bridging one piece without cues on the same line
            nxt = j + 1 if j + 1 < len(pieces) and pieces[j + 1][2] else j + 2
            if nxt >= len(pieces) or not pieces[nxt][2] or "\n" in text[pieces[j][1] - 1:pieces[nxt][0]]:
                break
            j = nxt
            union |= set(pieces[j][2])
        cues = tuple(sorted(union))
        if _screened(cues):
            end = _CLOSERS.match(text, pieces[j][1]).end()  # the note's closing bracket or quote
            spans.append(Injection(pieces[i][0], end, cues))
        i = j + 1
    return sorted(spans, key=lambda s: s.start)


def screen(text: str) -> tuple[str, list[int], list[Injection]]:
    """`text` without the spans addressed to the checker; for each kept character its index
    in `text` (plus the sentinel `len(text)`); and the spans removed."""
    found = find_injections(text)
    if not found:
        return text, [*range(len(text)), len(text)], []
    out: list[str] = []
    where: list[int] = []
    last = 0
    for span in found:
        out.append(text[last:span.start])
        where.extend(range(last, span.start))
        last = span.end
    out.append(text[last:])
    where.extend(range(last, len(text)))
    kept = "".join(out)
    # trailing blanks left by a removed note: drop them (offsets stay aligned)
    trim = len(kept.rstrip())
    return kept[:trim], [*where[:trim], len(text)], found


__all__ = ["CUES", "Injection", "find_injections", "screen"]
