"""Parsing and validation of the engine's JSON request bodies. Bad input raises `BadRequest`
naming the field (e.g. `sequences[3].loss_mask`), which the server returns as HTTP 400."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from .engine import SamplingParams
from .stop import normalise_stop

_SAMPLING_KEYS = {
    "max_new_tokens", "temperature", "top_p", "stop", "stop_token_ids", "no_stop_trim", "ignore_eos",
    "skip_special_tokens", "sampling_seed", "seed",
    # Accepted and ignored, so SGLang clients that send them still work.
    "top_k", "min_p", "min_new_tokens", "frequency_penalty", "presence_penalty", "repetition_penalty",
    "spaces_between_special_tokens", "n",
}


class BadRequest(ValueError):
    pass


def _object(body: Any, field: str) -> Dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest(f"{field} must be a JSON object")
    return body


def _number(value: Any, field: str, minimum: Optional[float] = None, maximum: Optional[float] = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRequest(f"{field} must be a finite number")
    if minimum is not None and value < minimum:
        raise BadRequest(f"{field} must be ≥ {minimum}")
    if maximum is not None and value > maximum:
        raise BadRequest(f"{field} must be ≤ {maximum}")
    return float(value)


def _integer(value: Any, field: str, minimum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{field} must be an integer")
    if minimum is not None and value < minimum:
        raise BadRequest(f"{field} must be ≥ {minimum}")
    return value


def _token_ids(value: Any, field: str, vocab_size: int) -> List[int]:
    if not isinstance(value, list):
        raise BadRequest(f"{field} must be a list of token ids")
    for index, token in enumerate(value):
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab_size:
            raise BadRequest(f"{field}[{index}] must be a token id in [0, {vocab_size})")
    return value


def parse_sampling(body: Any) -> SamplingParams:
    body = _object(body if body is not None else {}, "sampling_params")
    unknown = set(body) - _SAMPLING_KEYS
    if unknown:
        raise BadRequest(f"sampling_params: unknown field(s) {sorted(unknown)}")
    params = SamplingParams()
    if body.get("max_new_tokens") is not None:
        params.max_new_tokens = _integer(body["max_new_tokens"], "sampling_params.max_new_tokens", 0)
    if body.get("temperature") is not None:
        params.temperature = _number(body["temperature"], "sampling_params.temperature", 0.0)
    if body.get("top_p") is not None:
        params.top_p = _number(body["top_p"], "sampling_params.top_p", 0.0, 1.0)
        if params.top_p <= 0:
            raise BadRequest("sampling_params.top_p must be > 0")
    try:
        params.stop = normalise_stop(body.get("stop"))
    except ValueError as error:
        raise BadRequest(str(error)) from None
    if body.get("stop_token_ids") is not None:
        params.stop_token_ids = _token_ids(body["stop_token_ids"], "sampling_params.stop_token_ids", 1 << 31)
    params.no_stop_trim = bool(body.get("no_stop_trim", False))
    params.ignore_eos = bool(body.get("ignore_eos", False))
    params.skip_special_tokens = bool(body.get("skip_special_tokens", True))
    # SGLang names it sampling_seed; `seed` is accepted too.
    for key in ("sampling_seed", "seed"):
        if body.get(key) is not None:
            params.seed = _integer(body[key], f"sampling_params.{key}", 0)
    return params


def check_total_tokens(prompts: List[List[int]], max_new_tokens: int, context_length: int) -> None:
    """SGLang 0.5.23's check of a request's total (TokenizerManager._validate_one_request, with
    its default validate_total_tokens and no auto-truncate): a `max_new_tokens` that with the
    input exceeds the context is refused (HTTP 400) with SGLang's words, instead of decoding
    until the context is full."""
    for prompt in prompts:
        total = len(prompt) + max_new_tokens
        if total > context_length:
            raise BadRequest(
                f"Requested token count exceeds the model's maximum context length of {context_length} tokens. "
                f"You requested a total of {total} tokens: {len(prompt)} tokens from the input messages and "
                f"{max_new_tokens} tokens for the completion. Please reduce the number of tokens in the input "
                "messages or the completion to fit within the limit."
            )


def parse_generate(body: Any, vocab_size: int, encode, context_length: int) -> Tuple[List[List[int]], bool, SamplingParams, bool, Optional[List[str]]]:
    """Returns (prompts, batched, sampling, return_logprob, request ids)."""
    body = _object(body, "request body")
    if "input_ids" in body:
        raw = body["input_ids"]
        batched = isinstance(raw, list) and len(raw) > 0 and isinstance(raw[0], list)
        prompts = [_token_ids(p, f"input_ids[{i}]", vocab_size) for i, p in enumerate(raw)] if batched else [_token_ids(raw, "input_ids", vocab_size)]
    elif "text" in body:
        raw = body["text"]
        batched = isinstance(raw, list)
        texts = raw if batched else [raw]
        if not all(isinstance(t, str) for t in texts):
            raise BadRequest("text must be a string or a list of strings")
        prompts = [encode(t) for t in texts]
    else:
        raise BadRequest("request body needs input_ids (token ids) or text")
    if body.get("stream"):
        raise BadRequest("stream is not supported by this worker; send stream: false")
    sampling = parse_sampling(body.get("sampling_params"))
    # As SGLang: only a max_new_tokens the client gave is checked (the default is not).
    if isinstance(body.get("sampling_params"), dict) and body["sampling_params"].get("max_new_tokens") is not None:
        check_total_tokens(prompts, sampling.max_new_tokens, context_length)
    rid = body.get("rid")
    request_ids: Optional[List[str]] = None
    if rid is not None:
        request_ids = rid if isinstance(rid, list) else [rid]
        if len(request_ids) != len(prompts) or not all(isinstance(r, str) for r in request_ids):
            raise BadRequest("rid must be a string (or a list of strings, one per prompt)")
    return prompts, batched, sampling, bool(body.get("return_logprob", False)), request_ids


def optional_number(body: Dict[str, Any], key: str, default: Optional[float], minimum: Optional[float] = None) -> Optional[float]:
    if body.get(key) is None:
        return default
    return _number(body[key], key, minimum)


def optional_choice(body: Dict[str, Any], key: str, choices: Tuple[str, ...]) -> str:
    """A string field among `choices`; the first choice when absent."""
    value = body.get(key)
    if value is None:
        return choices[0]
    if value not in choices:
        raise BadRequest(f"{key} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def optional_flag(body: Dict[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false, got {value!r}")
    return value


def optional_weight_version(body: Dict[str, Any]) -> Optional[int]:
    """SGLang's `weight_version` (a string there); this worker's versions are integers."""
    value = body.get("weight_version")
    if value is None:
        return None
    text = str(value)
    if isinstance(value, bool) or not text.isdigit():
        raise BadRequest(f"weight_version must be a non-negative integer (as a string or number), got {value!r}")
    return int(text)


def required_path(body: Any, key: str) -> str:
    body = _object(body, "request body")
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} must be a non-empty path string")
    return value
