"""A research run: one question split into sub-questions, evidence gathered for each over rounds of searches,
and one report over all of it. The run is kept in its conversation (`Conversation.research`): each search is a
turn of that conversation (its query the sub-question, or the new search a gap round asked for), and the
report is its last turn, written from every turn's kept sources.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SubState(StrEnum):
    PLANNED = "planned"
    SEARCHING = "searching"
    ANNOTATING = "annotating"
    DONE = "done"
    CANCELLED = "cancelled"      # the user stopped it: what it had kept stays
    SKIPPED = "skipped"          # a limit was reached before it ran
    CUT = "cut"                  # a limit stopped its search: what it had kept stays


class Limit(StrEnum):
    MODEL_CALLS = "model calls"
    TOKENS = "tokens"
    SECONDS = "seconds"


@dataclass(frozen=True)
class SubQuestion:
    """One part of the question: its text, where its gathering stands, and the turns that searched for it."""

    text: str
    state: SubState = SubState.PLANNED
    turns: tuple[int, ...] = ()      # 1-based turns of the conversation that searched for it
    annotated: int = 0               # sources of its latest search annotated so far
    found: int = 0                   # sources of its latest search
    kept: int = 0                    # sources kept over all its searches

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "state": self.state.value, "turns": list(self.turns),
                "annotated": self.annotated, "found": self.found, "kept": self.kept}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubQuestion:
        return cls(text=str(data["text"]), state=SubState(data["state"]), turns=tuple(data.get("turns", ())),
                   annotated=int(data.get("annotated", 0)), found=int(data.get("found", 0)),
                   kept=int(data.get("kept", 0)))


@dataclass(frozen=True)
class RunCost:
    """What a run cost: chat calls, tokens (prompt plus output) and wall seconds."""

    model_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"model_calls": self.model_calls, "tokens": self.tokens, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class ResearchRun:
    """The plan, the rounds run, the limits reached and the cost; `report_turn` is the report's 1-based turn (0
    until the report is begun)."""

    question: str
    plan: tuple[SubQuestion, ...] = ()
    planned_by: str = ""             # the model that wrote the plan, or "fragments" (the rule-based split)
    rounds: int = 0
    limits_hit: tuple[Limit, ...] = ()
    cost: RunCost = RunCost()
    report_turn: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", tuple(self.plan))
        object.__setattr__(self, "limits_hit", tuple(self.limits_hit))

    def with_sub(self, index: int, **changes: Any) -> ResearchRun:
        """Sub-question `index` (0-based) changed."""
        plan = list(self.plan)
        plan[index] = dataclasses.replace(plan[index], **changes)
        return dataclasses.replace(self, plan=tuple(plan))

    def part_of(self, turn: int) -> int | None:
        """The 0-based sub-question that turn `turn` (1-based) searched for, None for the report or no search."""
        return next((i for i, sub in enumerate(self.plan) if turn in sub.turns), None)

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "plan": [s.to_json() for s in self.plan], "planned_by": self.planned_by,
                "rounds": self.rounds, "limits_hit": [limit.value for limit in self.limits_hit],
                "cost": self.cost.to_json(), "report_turn": self.report_turn}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResearchRun:
        cost = data.get("cost", {})
        return cls(question=str(data["question"]), plan=tuple(SubQuestion.from_json(s) for s in data["plan"]),
                   planned_by=str(data.get("planned_by", "")), rounds=int(data.get("rounds", 0)),
                   limits_hit=tuple(Limit(v) for v in data.get("limits_hit", ())),
                   cost=RunCost(int(cost.get("model_calls", 0)), int(cost.get("tokens", 0)),
                                float(cost.get("seconds", 0.0))),
                   report_turn=int(data.get("report_turn", 0)))
