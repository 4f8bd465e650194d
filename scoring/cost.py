"""What one job's scoring calls cost, per component, summed as the calls answer.

Each scorer reaches its upstream through the ``Ask`` it is handed; the
pipeline hands it one counted here (``CostTally.counted``), so every call that
answers adds its ``Reply.cost`` (tokens and dollars, as the gateway's ``Ask``
prices it) to the component that made it, whatever the scorer does with the
reply. A reply that tells no cost (an ``Ask`` that does not price, such as the
evaluation cache's) counts as a call of unknown price. The record's ``cost``
is then the answer's and these, summed (``RecordCost.of``).
"""

from __future__ import annotations

from typing import Any

from .types import Ask, CallCost, ComponentCost, RecordCost, Reply

__all__ = ["CostTally"]


class CostTally:
    """The scoring calls of one job, by component."""

    def __init__(self) -> None:
        self._by_component: dict[str, ComponentCost] = {}

    def counted(self, component: str, ask: Ask) -> Ask:
        """``ask``, each of whose answered calls is added to ``component``'s cost."""

        async def counting(messages: list[dict[str, Any]], **options: Any) -> Reply:
            reply = await ask(messages, **options)
            self.add(component, reply.cost)
            return reply

        return counting

    def add(self, component: str, call: CallCost | None) -> None:
        self._by_component[component] = self._by_component.get(component, ComponentCost()).plus(call)

    def record_cost(self, answer: CallCost | None) -> RecordCost:
        """The record's cost: the answer's (None: unknown) and every call counted here."""
        return RecordCost.of(answer, self._by_component)
