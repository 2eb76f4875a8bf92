"""Realistic reasoning transcripts, as text, for the demo, the benchmark and the simulation.

They are tokenized with whatever real tokenizer is loaded, so the token ids (and the way
markers meet their neighbours) are the real ones for that vocabulary.
"""

from __future__ import annotations

import msgspec


class Turn(msgspec.Struct, frozen=True):
    """One past exchange of a multi-turn conversation."""

    user: str
    reasoning: str
    answer: str


class Transcript(msgspec.Struct, frozen=True):
    """A conversation: history, the new question, and what the model writes for it."""

    title: str
    history: tuple[Turn, ...]
    user: str
    reasoning: str
    answer: str
    tool_call: str = ""


TRAINS = Transcript(
    title="two trains",
    history=(
        Turn(
            user="What is 17 * 23?",
            reasoning="17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391.",
            answer="17 × 23 = 391.",
        ),
    ),
    user=(
        "A train leaves Lyon at 9:40 going 120 km/h. Another leaves Paris, 465 km away, at "
        "10:10 going 150 km/h towards Lyon. When and where do they meet?"
    ),
    reasoning=(
        "Let me set up the problem. Put Lyon at position 0 and Paris at 465 km. The first "
        "train starts at 9:40 at 120 km/h; the second starts at 10:10 at 150 km/h going the "
        "other way.\n\nBy 10:10 the first train has travelled for 30 minutes, so it is at "
        "60 km. The gap is then 465 - 60 = 405 km, and they close it at 120 + 150 = 270 "
        "km/h. Time to meet: 405 / 270 = 1.5 hours after 10:10, which is 11:40.\n\nWhere? "
        "The first train covers 1.5 * 120 = 180 km after 10:10, so it is at 60 + 180 = 240 "
        "km from Lyon. Check from the other side: the second train covers 1.5 * 150 = 225 "
        "km, and 465 - 225 = 240. Both agree, good.\n\nLet me double-check the units: km/h "
        "times hours gives km, fine. And 11:40 is before either train would arrive alone, so "
        "the meeting really happens on the line."
    ),
    answer=(
        "They meet at **11:40**, **240 km from Lyon** (225 km from Paris).\n\n"
        "- By 10:10 the Lyon train is 60 km out; 405 km remain.\n"
        "- Closing speed 270 km/h → 1.5 h → 11:40."
    ),
)

PRIMES = Transcript(
    title="primes",
    history=(),
    user="Is 2027 a prime number? Explain briefly.",
    reasoning=(
        "I need to check divisibility of 2027 by primes up to sqrt(2027). sqrt(2025) = 45, "
        "so primes up to 45: 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43.\n\n"
        "2027 is odd. Digit sum 2+0+2+7 = 11, not divisible by 3. It doesn't end in 0 or 5. "
        "7 * 289 = 2023, remainder 4. 11: 2 - 0 + 2 - 7 = -3, no. 13 * 155 = 2015, remainder "
        "12. 17 * 119 = 2023, remainder 4. 19 * 106 = 2014, remainder 13. 23 * 88 = 2024, "
        "remainder 3. 29 * 69 = 2001, remainder 26. 31 * 65 = 2015, remainder 12. 37 * 54 = "
        "1998, remainder 29. 41 * 49 = 2009, remainder 18. 43 * 47 = 2021, remainder 6.\n\n"
        "No divisor found, so 2027 is prime. Hmm, let me re-verify 7: 7 * 290 = 2030, "
        "2030 - 2027 = 3, so remainder 4. Yes."
    ),
    answer="Yes — 2027 is prime: no prime up to √2027 ≈ 45 divides it.",
)

WEATHER = Transcript(
    title="weather tool call",
    history=(
        Turn(
            user="Hi! Can you help me plan a day out?",
            reasoning="The user wants help planning. I should ask where and when.",
            answer="Of course! Where are you, and which day are you thinking of?",
        ),
    ),
    user="I'm in Kyoto, tomorrow. Should I take an umbrella?",
    reasoning=(
        "The user is in Kyoto and asks about tomorrow's weather. I don't know the forecast; "
        "I have a get_weather tool. I'll call it with city Kyoto and day tomorrow, then "
        "answer about the umbrella."
    ),
    answer="Let me check the forecast for Kyoto.",
    tool_call='{"name": "get_weather", "arguments": {"city": "Kyoto", "day": "tomorrow"}}',
)

ESSAY = Transcript(
    title="long essay plan",
    history=(),
    user="Plan a 5-paragraph essay on why the printing press mattered.",
    reasoning=(
        "Five paragraphs: introduction, three body paragraphs, conclusion. What are the "
        "strongest three arguments? First, the spread of knowledge: books became cheaper, "
        "literacy rose, scientific results could be replicated because everyone read the same "
        "text. Second, religion and politics: the Reformation's pamphlets, vernacular Bibles, "
        "and later newspapers shaping public opinion. Third, standardisation of languages and "
        "of knowledge itself: spelling, grammar, maps and tables became fixed.\n\n"
        "Is there a counter-argument worth a mention? Some historians argue the effects were "
        "slow and uneven; manuscripts persisted for a century. I can acknowledge that in the "
        "conclusion.\n\n"
        "Thesis: by making identical copies cheap, the press turned knowledge from a scarce "
        "possession into a shared, checkable resource. Each body paragraph needs a concrete "
        "example: Vesalius' anatomy plates, Luther's 95 theses, Johnson's dictionary (later, "
        "but a consequence)."
    ),
    answer=(
        "**Thesis:** cheap identical copies turned knowledge into a shared, checkable "
        "resource.\n\n1. Intro — from scribes to presses.\n2. Science — Vesalius, "
        "replicable results.\n3. Religion & politics — Luther's theses, pamphlets.\n"
        "4. Standard languages — spelling, dictionaries, maps.\n5. Conclusion — slow, uneven, "
        "but decisive."
    ),
)

ALL: tuple[Transcript, ...] = (TRAINS, PRIMES, WEATHER, ESSAY)


def long_reasoning(min_chars: int = 4500) -> str:
    """Reasoning text of at least ``min_chars`` characters (about 1,000 tokens)."""
    parts: list[str] = []
    i = 0
    while sum(len(p) for p in parts) < min_chars:
        parts.append(ALL[i % len(ALL)].reasoning)
        i += 1
    return "\n\n".join(parts)
