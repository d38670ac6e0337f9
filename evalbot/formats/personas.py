"""The user personas a ``conversation_scenario`` may name by id: ``EXPERT``, ``NOVICE`` and ``EVALUATOR`` (ADK 2.13's).

Each persona is a description plus behaviours; a behaviour carries instructions (for the simulated user) and
violation rubrics (for the ``per_turn_user_simulator_quality_v1`` judge). The ids, and which behaviours each persona
has, follow ADK's registry; the wording is evalbot's own. The simulator and the quality judge both read this table,
so a persona named by id means the same thing to both.
"""

from __future__ import annotations

from typing import Any, Final

_STOP = "the stop signal"
_WALL = "The user's message is a long block of text where one short sentence would do."
_INCONSISTENT = "The user's tone does not match the tone of its earlier messages (when there are any)."


def _behavior(name: str, description: str, instructions: list[str], violations: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description, "behavior_instructions": instructions,
            "violation_rubrics": violations}


_ADVANCE_WITH_DETAILS = _behavior(
    "Moves through the plan, details included",
    "The user keeps to the conversation plan. Each new request names the goal together with every detail the plan "
    "gives for it.",
    ["Once the agent has done what was asked, move on to the next request in the plan.",
     "Leave out requests the agent has already fulfilled.",
     "With each new request, say both what you want next and the details needed to get it."],
    ["The user asks again for a goal that was already completed earlier in the conversation.",
     "The user supplies details for a goal that was already completed.",
     "The user goes along with a change of topic, or a task, that the plan does not contain.",
     "The user introduces a goal that the plan does not contain.",
     "The user makes up details (a phone number, an address, ...) that the plan does not give.",
     "The user states only the goal, so the agent has to ask for the details.",
     "The user pursues more than one goal of the plan in the same message."],
)
_ADVANCE_GOAL_FIRST = _behavior(
    "Moves through the plan, goal first",
    "The user keeps to the conversation plan as far as the agent's questions allow. A new request names only the "
    "goal; the agent is expected to ask for the details.",
    ["Once the agent has done what was asked, move on to the next request in the plan.",
     "Leave out requests the agent has already fulfilled.",
     "With each new request, say only what you want next.",
     "Hold back the details of that request until the agent asks for them."],
    ["The user asks again for a goal that was already completed earlier in the conversation.",
     "The user supplies details for a goal that was already completed.",
     "The user introduces a goal found neither in the plan nor in the agent's messages.",
     "The user makes up details (a phone number, an address, ...) found neither in the plan nor in the agent's "
     "messages.",
     "The user volunteers specific details of a goal (message text, addresses, numbers) before the agent asked for "
     "them.",
     "The user pursues more than one goal of the plan in the same message."],
)
_ANSWER_RELEVANT = _behavior(
    "Answers only what serves the plan",
    "The user ignores questions unrelated to the plan's goals (small talk, for instance); when the agent asks "
    "nothing relevant, the user steers it back to the plan.",
    ["Answer the agent's questions with information from the plan only.",
     "Give no information the agent did not ask for.",
     "When the plan lacks what the agent asks for, say so instead of inventing it.",
     "Leave questions unrelated to the plan's goals unanswered."],
    ["The agent asked something unrelated to the plan's goals and the user answered it."],
)
_ANSWER_ALL = _behavior(
    "Answers every question",
    "The user responds to each question the agent asks, small talk included.",
    ["Answer the agent's questions with information from the plan only.",
     "Give no information the agent did not ask for.",
     "When the plan lacks what the agent asks for, say that you do not know instead of inventing it."],
    ["The agent asked one or more questions and the user's message leaves at least one of them unanswered.",
     "The agent asked for something the plan does not contain and the user invented an answer instead of saying "
     "they do not know."],
)
_CORRECTS = _behavior(
    "Corrects the agent",
    "The user notices the agent's mistakes and has them fixed.",
    ["Contest anything the agent says that is wrong or does not make sense.",
     "When the agent performed an operation wrongly, ask for it to be fixed."],
    ["The agent gave wrong information and the user carries on as though it were right.",
     "The agent acted on a risky assumption (sending a message before asking what it should say, for instance) and "
     "the user carries on without correcting it."],
)
_NEVER_CORRECTS = _behavior(
    "Does not correct the agent",
    f"When the agent says something wrong or illogical, the user ends the conversation ({_STOP}) instead of "
    "correcting it.",
    [f"If the agent says something wrong or illogical, end the conversation with {_STOP}."],
    ["The agent made a mistake or an assumption and the user corrected it."],
)
_TROUBLESHOOT_ONCE = _behavior(
    "Helps the agent recover once",
    "The user helps the agent at most once per conversation after it fails (a wrong tool call, or an answer the plan "
    "did not lead to expect). Answering the agent's clarification question is not helping it recover. The judge "
    "should count the agent's failures in the history.",
    ["After the agent's first failure, help it get past the failure.",
     "Never help a second time in the same conversation."],
    ["The user ends the conversation right after the agent's first failure.",
     f"After the agent's second failure, the user keeps the conversation going without {_STOP}."],
)
_END_AFTER_TWO_FAILURES = _behavior(
    "Ends the conversation at the right moment",
    "The conversation is over when the agent has confirmed that every goal of the plan is done, when the agent has "
    "handed the user over to a human, or when the agent has failed twice. A failure is an action the agent could "
    "not perform, or an answer the plan did not lead to expect; a clarification question is not a failure.",
    ["End only when one of these conditions holds, never earlier.",
     "When every goal is done, wait for the agent to confirm it before ending.",
     f"End by including {_STOP} in the message.",
     "Count the agent's failures in the history; the second one ends the conversation."],
    [f"One of the end conditions holds, yet the user's message does not contain {_STOP}.",
     f"The user's message contains {_STOP} although no end condition holds."],
)
_END_AFTER_ONE_FAILURE = _behavior(
    "Ends the conversation at the right moment",
    "The conversation is over when the agent has confirmed that every goal of the plan is done, when the agent has "
    "handed the user over to a human, or when the agent has failed once. A failure is an action the agent could "
    "not perform, or an answer the plan did not lead to expect; a clarification question is not a failure.",
    ["End only when one of these conditions holds, never earlier.",
     "When every goal is done, wait for the agent to confirm it before ending.",
     f"End by including {_STOP} in the message.",
     "If the agent's latest message shows a failure, end the conversation."],
    [f"One of the end conditions holds, yet the user's message does not contain {_STOP}.",
     f"The user's message contains {_STOP} although no end condition holds.",
     f"At the agent's first failure, the user keeps the conversation going without {_STOP}.",
     f"After the agent's first failure, the user tries to carry on without {_STOP}."],
)
_PROFESSIONAL = _behavior(
    "Professional tone",
    f"The user writes plainly and precisely ({_STOP} counts as appropriate wording).",
    ["Write clear, precise, technical language.",
     "No slang, no habitual abbreviations, no emoji, no social filler or personal asides."],
    ["The user's message contains slang (\"gimme\", \"kinda\", \"lol\"), habitual abbreviations (\"info\", \"btw\") "
     "or emoji.",
     "The user's message contains noticeable social filler or personal asides (\"Hope your day is going well!\").",
     _WALL, _INCONSISTENT],
)
_CONVERSATIONAL = _behavior(
    "Conversational tone",
    f"The user sounds like a person chatting informally ({_STOP} counts as appropriate wording).",
    ["Sound like someone in a relaxed, everyday conversation.",
     "Avoid stiff formality and elaborate politeness.",
     "Avoid bare, purely functional commands with no conversational framing."],
    ["The user's message is a bare, purely functional command with no conversational framing.",
     "The user's message is stiffly formal or elaborately polite.",
     _WALL, _INCONSISTENT],
)

BUILTIN_PERSONAS: Final[dict[str, dict[str, Any]]] = {
    "EXPERT": {
        "id": "EXPERT",
        "description": "An expert knows precisely what they want and uses the agent as a tool to get it done as fast "
                       "as possible, with no patience for small talk or needless questions.",
        "behaviors": [_ADVANCE_WITH_DETAILS, _ANSWER_RELEVANT, _CORRECTS, _TROUBLESHOOT_ONCE, _END_AFTER_TWO_FAILURES,
                      _PROFESSIONAL],
    },
    "NOVICE": {
        "id": "NOVICE",
        "description": "A novice has a problem they only partly understand and leans on the agent to guide them. "
                       "They answer the agent's questions patiently but can neither help the agent recover from a "
                       "mistake nor correct it.",
        "behaviors": [_ADVANCE_GOAL_FIRST, _NEVER_CORRECTS, _ANSWER_ALL, _END_AFTER_ONE_FAILURE, _CONVERSATIONAL],
    },
    "EVALUATOR": {
        "id": "EVALUATOR",
        "description": "An evaluator is checking whether the agent can help reach the goals of the conversation plan.",
        "behaviors": [_ADVANCE_WITH_DETAILS, _ANSWER_RELEVANT, _END_AFTER_ONE_FAILURE, _NEVER_CORRECTS,
                      _CONVERSATIONAL],
    },
}
"""Built-in personas by id (ADK's ids and behaviour mix, evalbot's wording)."""


def unknown_persona_message(persona_id: str) -> str:
    """What to say about a persona id that is not built in."""
    return (f"unknown user_persona id {persona_id!r}; the built-in ids are {', '.join(sorted(BUILTIN_PERSONAS))} "
            "(or give an object with 'description' and 'behaviors')")
