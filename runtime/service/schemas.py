"""The service's request and response bodies (pydantic); the OpenAPI document comes from them.

What a client sends is validated here (sizes, id shapes) before any handler runs; what the
service returns is described here so the schema at ``/openapi.json`` is the contract.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_MESSAGE_CHARS = 8000
MAX_THEORY_BYTES = 512_000
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
CHECK_FILENAME = r"^[A-Za-z0-9_.-]{1,100}\.ya?ml$"


MAX_ID_CHARS = 128
MAX_META_BYTES = 16_384
MAX_DEPTH = 16
MAX_TOGGLES = 64
MAX_BODY_BYTES = MAX_THEORY_BYTES + 65_536
"""The largest request body the service reads (a theory file and its JSON wrapping); more is
413 before any handler runs."""


def storable(value: Any, where: str = "body", depth: int = 0) -> None:
    """Raise ValueError for text no database can store, before anything is written: U+0000
    (PostgreSQL's text and JSONB refuse it) and lone surrogates (not Unicode: no UTF-8
    encoding), in any string or key of a JSON value; and nesting past :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where} is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where} contains U+0000, which cannot be stored")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(
                f"{where} contains a lone surrogate (U+{ord(value[error.start]):04X}), "
                "which is not Unicode text"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            storable(key, f"{where} (a key)", depth + 1)
            storable(item, f"{where}.{key}" if len(where) < 200 else where, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            storable(item, f"{where}[{index}]" if len(where) < 200 else where, depth + 1)


class _Body(BaseModel):
    """A request body: unknown fields, values of the wrong type (``"yes"`` for a bool) and
    text that cannot be stored are 422, before any handler runs."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        storable(data)
        return data


# -- learners ----------------------------------------------------------------------------------


class LearnerCreate(_Body):
    id: str | None = Field(
        None, pattern=ID_PATTERN, description="your id for the learner; generated when omitted"
    )
    meta: dict[str, Any] = Field(
        default_factory=dict,
        description=f"your data (name, cohort): at most {MAX_META_BYTES} bytes as JSON",
    )

    @field_validator("meta")
    @classmethod
    def _meta_size(cls, meta: dict[str, Any]) -> dict[str, Any]:
        size = len(json.dumps(meta, ensure_ascii=False).encode("utf-8"))
        if size > MAX_META_BYTES:
            raise ValueError(f"meta is {size} bytes as JSON; at most {MAX_META_BYTES}")
        return meta


class LearnerOut(BaseModel):
    id: str
    meta: dict[str, Any]
    created_at: datetime
    sessions: int


class LearnerGoal(BaseModel):
    """What the learner's graded answers say about one goal of a curriculum."""

    goal: str
    mastery: float = Field(description="P(mastered), by knowledge tracing over graded answers")
    evidence: int = Field(description="graded answers it rests on")
    solved: list[str] = Field(description="exercises of this goal solved")
    threshold: float = Field(description="the goal's mastery threshold")
    mastered: bool
    missing_prerequisites: list[str] = Field(description="required goals not yet mastered")


class LearnerDeleted(BaseModel):
    id: str
    sessions_deleted: int


class ExamSittingOut(BaseModel):
    exam: str
    sitting: int = Field(description="1 for the first; more only under a granted retake")
    session_id: str
    sat_at: datetime


class ExamRetakeOut(BaseModel):
    """An instructor's grant of one more sitting of an exam."""

    learner_id: str
    exam: str
    sitting: int = Field(description="the sitting this grant allows (and only it)")
    granted_by: str = Field(description="the granting key's id (`cli`: pedrag serve)")
    granted_at: datetime


class LearnerExams(BaseModel):
    learner_id: str
    sittings: list[ExamSittingOut]
    retakes: list[ExamRetakeOut]


# -- sessions ----------------------------------------------------------------------------------


class SessionCreate(_Body):
    theory: str = Field(
        "socratic", max_length=MAX_ID_CHARS, description="a theory id from GET /v1/theories"
    )
    curriculum: str | None = Field(
        None, max_length=MAX_ID_CHARS, description="a curriculum id; default: the only one"
    )
    exercise: str | None = Field(
        None, max_length=MAX_ID_CHARS, description="an exercise id of the curriculum"
    )
    learner_id: str | None = Field(None, pattern=ID_PATTERN, description="a learner of yours")
    seed: int | None = Field(None, ge=0, lt=2**31, description="selection seed (reproducible)")


class SessionOut(BaseModel):
    """A session as its learner may see it: no metrics, no meta (the instructor's view is
    :class:`SessionDetail`)."""

    id: str
    theory: str
    exercise: str | None
    curriculum: str | None
    learner_id: str | None
    turns: int = Field(description="committed turns; the next turn is turns + 1")
    solved: bool


class SessionDetail(SessionOut):
    """A session as an instructor sees it: its metrics and the toggles its theory offers."""

    metrics: dict[str, Any]
    instructor_toggles: list[str] = Field(
        description="trusted metrics an instructor may set in this session's theory"
    )
    meta: dict[str, Any]


class SessionSummary(BaseModel):
    id: str
    turns: int
    created_at: datetime
    updated_at: datetime
    meta: dict[str, Any]


# -- turns -------------------------------------------------------------------------------------


class TurnCreate(_Body):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    turn: int | None = Field(
        None,
        ge=1,
        description="the turn index this message should become (committed turns + 1); "
        "another request that committed it first makes this one 409",
    )


class TurnOut(BaseModel):
    """The learner view of a turn: what the student sees and nothing derived from hidden data
    (no audit, no drafts, no detector or judge reasons, no contract). The instructor view is
    the session's audit (``GET /v1/sessions/{id}/audit``)."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    turn: int = Field(description="the committed turn's index")
    reply: str = Field(description="exactly what the student sees")
    rung: str = Field(description="the help rung of the reply, H0 (none) to H7 (full solution)")


class AuditOut(BaseModel):
    session_id: str
    records: list[dict[str, Any]]


# -- instructor --------------------------------------------------------------------------------


class InstructorUpdate(_Body):
    exam_lockdown: bool | None = Field(None, description="shorthand for the `exam_active` toggle")
    explain_mode: bool | None = Field(None, description="shorthand for the `explain_mode` toggle")
    metrics: dict[str, bool] = Field(
        default_factory=dict,
        max_length=MAX_TOGGLES,
        description="any instructor toggle of the theory, by metric name",
    )
    lift_conduct_restriction: bool = False
    end_exam: bool = Field(
        False,
        description="end the session's exam at the learner's next message: the latest "
        "submission is graded and the one result line is sent (422 when it is not an exam)",
    )


# -- theories ----------------------------------------------------------------------------------


class ExerciseOut(BaseModel):
    id: str
    goal: str
    prompt: str
    exam: bool


class CurriculumOut(BaseModel):
    id: str
    exercises: list[ExerciseOut]


class TheoryOut(BaseModel):
    id: str
    name: str
    description: str
    actions: int
    rules: int
    policy_hash: str
    instructor_toggles: list[str]


class TheoriesOut(BaseModel):
    theories: list[TheoryOut]
    curricula: list[CurriculumOut]


class CheckRequest(_Body):
    source: str = Field(max_length=MAX_THEORY_BYTES, description="the theory file's YAML text")
    filename: str = Field(
        "theory.yaml",
        pattern=CHECK_FILENAME,
        description="the name diagnostics use for the file",
    )
    semantic: bool = Field(True, description="false: front-end checks only (no z3)")


class Health(BaseModel):
    status: str
    detail: str = ""


# -- keys --------------------------------------------------------------------------------------


class KeyCreate(_Body):
    role: Literal["learner", "instructor", "admin"] = Field(
        description="learner: sessions and turns; instructor: also toggles, audits, learner "
        "records, checks; admin: also keys and deletion"
    )
    label: str = Field("", max_length=200, description="your note on what holds the key")
    learner_id: str | None = Field(
        None,
        pattern=ID_PATTERN,
        description="a learner key's learner: its sessions are that learner's and it reaches "
        "no other's; without one a learner key starts anonymous sessions only",
    )


class KeyOut(BaseModel):
    id: str = Field(description="the key's name (not the key): DELETE /v1/keys/{id} revokes it")
    role: str
    label: str
    created_at: datetime
    revoked_at: datetime | None
    learner_id: str | None = Field(None, description="the learner a learner key acts as")


class KeyRoleOut(BaseModel):
    """The key a request is made with, as any key may read it: what it may do, before it
    tries (the playground asks before creating a session its key could not then read)."""

    id: str = Field(description="the key's name (not the key)")
    role: str = Field(
        description="learner, instructor or admin; each may do what those before it may"
    )
    learner_id: str | None = Field(
        None, description="a learner key's learner (None: anonymous sessions only)"
    )


class KeyIssued(KeyOut):
    key: str = Field(description="the API key itself, shown this once (stored hashed)")
