"""LLM judges: the Judge protocol, the google-genai backend and the layers around it (cache, retries, limits)."""

from evalbot.judges.base import (
    CandidateCountUnsupported,
    Judge,
    JudgeCallError,
    JudgeError,
    JudgeReply,
    JudgeRequest,
    ReplayMiss,
    Usage,
)

__all__ = [
    "CandidateCountUnsupported",
    "Judge",
    "JudgeCallError",
    "JudgeError",
    "JudgeReply",
    "JudgeRequest",
    "ReplayMiss",
    "Usage",
]
