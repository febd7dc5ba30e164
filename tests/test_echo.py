"""What an answer copies from its prompt, on the prompt `build_messages` writes: a header written back is an
echo and its "[N]" no claim; a source's sentence quoted and cited after it, or the annotator's quote taken with
its label, is neither; an answer that only names sources says nothing."""

from __future__ import annotations

from ragtui.echo import echoed_spans, is_echo, says_nothing
from ragtui.llm.citations import check_citations
from ragtui.llm.synthesize import build_messages
from ragtui.model import conversation as transitions
from tests.tui.scripted import make_sources


def _prompt() -> tuple[list[str], list[str]]:
    sources = [transitions.annotated(s, f'"{s.chunk.text.split(".")[0]}." This quote is relevant.', relevant=True,
                                     by="chat", prompt="") for s in make_sources()[:3]]
    messages = build_messages("how does natural selection work", sources)
    return [text for _, text in messages], [s.chunk.text for s in sources]


def test_a_header_written_back_is_an_echo_and_its_number_no_citation() -> None:
    prompt, _ = _prompt()
    user = prompt[-1]
    copy = " ".join(user[user.index("[1] SOURCE:"):][:300].split())
    assert is_echo(copy, prompt) and echoed_spans(copy, prompt)[0][0] == 0
    assert check_citations(copy, {1, 2, 3}).cited == (1,)                       # the parser alone counts it
    assert check_citations(copy, {1, 2, 3}, prompt).cited == ()                 # as a claim it is none
    example = "Cite like [2] or [1][3]. When you quote"                         # the instructions' example
    assert check_citations(example, {1, 2, 3}, prompt).cited == ()


def test_a_quoted_sentence_or_the_annotators_quote_cited_after_it_is_no_echo() -> None:
    prompt, texts = _prompt()
    first = texts[0].split(".")[0]
    for answer in (f"{first}. [1]", f'According to the sources: ANNOTATION: "{first}." This quote is relevant. [1]'):
        assert not is_echo(answer, prompt) and check_citations(answer, {1, 2, 3}, prompt).cited == (1,)
        assert not says_nothing(answer, texts)


def test_an_answer_that_only_names_sources_says_nothing() -> None:
    _, texts = _prompt()
    assert says_nothing("The source is [1] and the other two are [2] and [3].", texts)
    assert says_nothing("See [1], [2].", texts)
    assert not says_nothing(f"{texts[1].split()[0]} {texts[1].split()[1]} [2].", texts)


def test_a_bracket_of_words_in_a_quoted_source_is_no_frame() -> None:
    """The stand-in quoted an annotation whose quote had "[just]" in it (SQuAD's Islamism paragraph): that is
    a quote of the source, cited after it, not an echo."""
    text = "Islamists ask why they believe in Islamism, not [just] Islam, and say so in many ways."
    user = (f'SOURCES:\n\n[1] SOURCE: d/islamism.txt\nANNOTATION: "{text}" This quote is relevant.\n<<<\n{text}\n>>>'
            "\n\nQUESTION: what do Islamists ask\n\nAnswer from these sources only, citing them as [N].")
    answer = f'According to the sources: ANNOTATION: "{text}" This quote is relevant. [1]'
    assert not is_echo(answer, [user]) and check_citations(answer, {1}, [user]).cited == (1,)
