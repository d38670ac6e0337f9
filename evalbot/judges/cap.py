"""A run-wide cap on the requests that reach the judge service (a backstop under the per-verdict bounds)."""

from __future__ import annotations

import logging

from evalbot.judges.base import Judge, JudgeCallError, JudgeReply, JudgeRequest

log = logging.getLogger("evalbot")


class RequestCap:
    """Lets at most ``limit`` requests (each HTTP attempt, retries included) through to ``inner``; later ones fail
    permanently (their verdicts are not_evaluated with the reason), and the first refusal is logged once."""

    def __init__(self, inner: Judge, limit: int | None = None, why: str = "") -> None:
        self.inner = inner
        self.limit = limit
        self.why = why
        self.sent = 0
        self.refused = 0

    def set(self, limit: int, why: str) -> None:
        """Cap the run at ``limit`` requests; ``why`` says how the number was derived (printed when it is hit)."""
        self.limit, self.why = limit, why

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Forward ``request`` while under the cap."""
        if self.limit is not None and self.sent >= self.limit:
            message = f"judge request cap reached: {self.limit:,} requests for this run ({self.why})"
            if not self.refused:
                log.warning("evalbot: %s; the judged verdicts still to ask are not_evaluated", message)
            self.refused += 1
            raise JudgeCallError(message)
        self.sent += 1
        return await self.inner.generate(request)
