"""Words that say what kind of question is asked, not what it is about: one list for every reader.

The keyword leg does not require them in its AND tier ("how do pumps work"
must not need a chunk containing "how" and "do"), WordNet never expands them
("do" -> "bash", "brawl"), and the best-window search ignores them (they match
every sentence). Pure data, importable from any layer.
"""

from __future__ import annotations

QUESTION_WORDS = frozenset({
    "how", "what", "when", "where", "which", "who", "whom", "whose", "why",
    "do", "does", "did", "can", "could", "should", "would", "will", "shall", "may", "might", "must",
    "is", "are", "was", "were", "be", "been", "am", "has", "have", "had",
    "i", "me", "my", "we", "our", "you", "your", "it", "its", "there",
    "please", "tell", "explain", "describe",
})
FUNCTION_WORDS = QUESTION_WORDS | frozenset({
    "a", "an", "and", "as", "at", "but", "by", "for", "from", "if", "in", "into", "of", "on", "or",
    "so", "than", "that", "the", "their", "them", "then", "these", "they", "this", "to", "with",
})
