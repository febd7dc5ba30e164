"""A research session: a conversation of turns, each retrieve -> annotate -> synthesize, as async iterators of events.

`session.ResearchSession` holds the verbs the front ends call (run, follow-up,
revise a rewrite, re-annotate, synthesize, continue, rescue, drop, save, reopen);
the conversation it works on (`ragtui.model.conversation.Conversation`) is frozen and
read-only to them. `ledger` keeps that conversation and saves it, `models` owns the
chat clients, and `stages` runs one turn's stages: number the sources, annotate,
synthesize and stream the answer. `deep.ResearchRunner` drives a research run over one session: a plan of
sub-questions (`plan`), a search of each, gap rounds, one report; `run_json` is its JSON shape.
"""
