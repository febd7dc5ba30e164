"""The chat clients a session talks to, the synthesis model's and the annotator's: opened once, closed with it."""

from __future__ import annotations

from ragtui.config import ConfigError, Settings
from ragtui.events import Stage
from ragtui.llm.chat import ChatModel, LLMError, refitted
from ragtui.research.ledger import Ledger


class ChatClients:
    """Opens the session's models on first use (recording the synthesis model's name in the conversation)."""

    def __init__(self, settings: Settings, ledger: Ledger) -> None:
        self.settings = settings
        self.ledger = ledger
        self.synthesis: ChatModel | None = None
        self.annotator: ChatModel | None = None

    @property
    def configured(self) -> bool:
        """Whether a chat model is named at all (llm.model, or the one a reopened session was answered with)."""
        return bool(self.ledger.conversation.synthesis_model or self.settings.llm.model)

    async def synthesis_model(self) -> ChatModel:
        if self.synthesis is None:
            from ragtui.llm.providers import synthesis_model

            self.synthesis = await synthesis_model(self.settings, self.ledger.conversation.synthesis_model or None)
            self.ledger.change(synthesis_model=self.synthesis.model)
        return self.synthesis

    async def annotation_model(self, model: str | None) -> ChatModel:
        """The session's annotator, or a one-off one for another model (the caller closes that one)."""
        from ragtui.llm.providers import annotation_model

        if model is None and self.annotator is not None:
            return self.annotator
        conversation = self.ledger.conversation
        return await annotation_model(self.settings, model or conversation.annotation_model or None,
                                      synthesis_model_name=conversation.synthesis_model or None)

    async def fitted(self, model: ChatModel, messages: list[tuple[str, str]]) -> ChatModel:
        """The synthesis model sized for these messages (Ollama's num_ctx); the old client is closed if replaced."""
        fitted = await refitted(model, messages, self.settings.llm.max_tokens)
        if fitted is not model:
            self.synthesis = fitted
        return fitted

    async def check(self) -> tuple[str, Stage]:
        """"" when the chat models answer, else why not and the stage that will fail."""
        stage: Stage = "synthesize"
        try:
            await self.synthesis_model()
            if self.ledger.conversation.annotation_on:
                stage = "annotate"
                self.annotator = await self.annotation_model(None)
        except (ConfigError, LLMError) as exc:
            return str(exc), stage
        return "", stage

    async def aclose(self) -> None:
        """Close the HTTP clients of the models this session opened."""
        for llm in (self.annotator, self.synthesis):
            if llm is not None:
                await llm.aclose()
        self.annotator = self.synthesis = None
