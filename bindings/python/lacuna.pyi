"""Lacuna: local inference for diffusion language models over GGUF files.

`Engine(path)` or `Engine.demo()` loads a model; `generate`, `chat`, `infill` and
`stream` run it. Settings are keyword arguments named as the fields of the Rust
`lacuna::Settings` (see `SETTINGS` and docs/python.md).
"""

from os import PathLike
from types import TracebackType
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Type, Union

__version__: str

#: Every keyword a generation takes (the `lacuna::Settings` fields but `likelihood_samples`,
#: which is `Engine.score`'s `samples`).
SETTINGS: List[str]

#: The glyph a masked position is drawn as in `Canvas.text`.
MASK_GLYPH: str

Prompt = Union[str, Sequence[int]]
Message = Dict[str, str]
Constraint = Union[Literal["json_object"], Dict[str, Any]]

class LacunaError(Exception):
    """An error the engine reports; the message is the Rust error's, as the CLI and the
    server print it."""

    #: The setting at fault (a `lacuna::Settings` field name), when one is.
    setting: Optional[str]

class SettingsError(LacunaError, ValueError):
    """A request or option that cannot work: a setting's value or combination, a prompt
    over the context, an unknown device, weight layout or demo name."""

class Engine:
    """One model loaded from a GGUF file, shared by every thread that uses it (concurrent
    generations are batched)."""

    def __init__(
        self,
        model: Union[str, "PathLike[str]"],
        threads: Optional[int] = None,
        weights: Optional[Literal["auto", "fast", "compact"]] = None,
        device: Optional[str] = None,
    ) -> None:
        """Loads `model`: a GGUF path, or `hf:OWNER/REPO:QUANT` / `hf:OWNER/REPO/FILE.gguf`
        from the Hugging Face cache (downloaded when missing; honours HF_HOME,
        HF_HUB_OFFLINE, HF_TOKEN, HF_ENDPOINT). `device`: "auto", "cpu", "cuda", "cuda:N"."""
    @staticmethod
    def demo(
        name: Literal["kjv", "tasks", "tasks-llada2"] = "kjv",
        threads: Optional[int] = None,
        weights: Optional[Literal["auto", "fast", "compact"]] = None,
        device: Optional[str] = None,
    ) -> "Engine":
        """A demo model built into the package; its generations take the schedule it was
        trained for where the settings give none."""
    @staticmethod
    def demos() -> List[str]:
        """The demo models' names."""
    def generate(
        self,
        prompt: Prompt,
        *,
        gen_length: Optional[int] = None,
        steps: Optional[int] = None,
        block_length: Optional[int] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        top_k: Optional[int] = None,
        seed: Optional[int] = None,
        remasking: Optional[Literal["low_confidence", "random"]] = None,
        algorithm: Optional[Literal["origin", "maskgit_plus", "topk_margin", "entropy"]] = None,
        alg_temp: Optional[float] = None,
        cfg_scale: Optional[float] = None,
        cache: Optional[Literal["none", "prefix", "dual"]] = None,
        parallel: Optional[bool] = None,
        threshold: Optional[float] = None,
        factor: Optional[float] = None,
        entropy_bound: Optional[float] = None,
        fast: Optional[bool] = None,
        editing: Optional[bool] = None,
        editing_threshold: Optional[float] = None,
        max_post_steps: Optional[int] = None,
        keep_after_eos: Optional[bool] = None,
        logprobs: Optional[int] = None,
        infill_lengths: Optional[Sequence[int]] = None,
        constraint: Optional[Constraint] = None,
    ) -> "Output":
        """Generates for `prompt` (raw text, no chat template; or token ids). Blocks, with
        the GIL released."""
    def chat(self, messages: Sequence[Message], **settings: Any) -> "Output":
        """Generates for chat `messages` through the model's chat template."""
    def infill(self, prefix: str, suffix: str, **settings: Any) -> "Output":
        """Fills the middle between `prefix` and `suffix` (`gen_length` positions, or the
        best of `infill_lengths`)."""
    def stream(self, prompt: Prompt, **settings: Any) -> "Stream":
        """Starts a generation; iterate for a `Canvas` per step, then the `Output`."""
    def stream_chat(self, messages: Sequence[Message], **settings: Any) -> "Stream":
        """`stream` for chat messages."""
    def stream_infill(self, prefix: str, suffix: str, **settings: Any) -> "Stream":
        """`stream` for an infill."""
    def score(
        self,
        text: Prompt,
        samples: Optional[int] = None,
        seed: Optional[int] = None,
        logprobs: Optional[int] = None,
    ) -> "Score":
        """Every token's log-likelihood value under the model (the LLaDA estimate)."""
    def tokenize(self, text: str) -> List[int]:
        """The token ids of `text`, as a text prompt is encoded."""
    def decode(self, tokens: Sequence[int]) -> str:
        """The text of token ids, control tokens hidden."""
    def stats(self) -> Dict[str, int]:
        """Counters: active, forwards, passes, steps, committed."""
    @property
    def name(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def demo_name(self) -> Optional[str]: ...
    @property
    def has_chat_template(self) -> bool: ...
    @property
    def mask_token_id(self) -> int: ...
    @property
    def eos_ids(self) -> List[int]: ...
    @property
    def context_length(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def load_s(self) -> float: ...
    @property
    def on_gpu(self) -> bool: ...

class Stream(Iterator[Union["Canvas", "Output"]]):
    """One generation's steps: a `Canvas` per step, then the `Output`. Dropping it,
    `break`, `close()`, `cancel()` or leaving a `with` block cancels the generation."""

    def __iter__(self) -> "Stream": ...
    def __next__(self) -> Union["Canvas", "Output"]: ...
    @property
    def result(self) -> Optional["Output"]:
        """The `Output` once the iteration has returned it."""
    @property
    def cancelled(self) -> bool: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Stream": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Canvas:
    """One denoising step's generated region."""

    step: int
    total_steps: int
    block: int
    num_blocks: int
    tokens: List[int]
    pieces: List[Optional[str]]
    text: str
    committed: List[int]
    confidences: List[float]
    masks: int
    draft: int
    mask_id: int

class Stats:
    steps: int
    denoiser_calls: int
    logit_rows: int
    cache_fills: int
    positions_computed: int
    finish: Literal["completed", "eos"]
    eos_index: Optional[int]
    eos_token: Optional[int]

class Timings:
    prepare_s: float
    step_ms: List[float]
    encode_ms: List[float]
    total_s: float
    step_ms_median: float

class TopLogprob:
    token: int
    text: str
    bytes: bytes
    logprob: float

class TokenLogprob:
    token: int
    text: str
    bytes: bytes
    logprob: float
    top: List[TopLogprob]

class InfillCandidate:
    length: int
    score: float
    tokens: int
    text: str

class InfillSearch:
    chosen: int
    candidates: List[InfillCandidate]

class Output:
    """The result of a generation."""

    text: str
    tokens: List[int]
    prompt_tokens: List[int]
    canvas: List[int]
    mask_id: int
    stats: Stats
    timings: Timings
    logprobs: Optional[List[Optional[TokenLogprob]]]
    infill: Optional[InfillSearch]
    forwards: int
    tokens_per_s: float
    tokens_per_forward: float
    positions_per_forward: float

class Score:
    """Per-token log-likelihood values: `sum(logprobs[c:])` estimates
    `log p(tokens[c:] | tokens[:c])`."""

    tokens: List[int]
    logprobs: List[Optional[float]]
    top: List[List[Tuple[int, float]]]
    exact: List[bool]
    passes: int
    def log_likelihood(self, start: int = 1) -> float: ...
