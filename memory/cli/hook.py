"""``dualmem hook session-start | prompt | stop | session-end | pre-compact``: Claude Code's hooks
(see ``memory.hooks``).

A hook reads Claude Code's JSON document on stdin and prints the hook's JSON document on
stdout. It never fails the session: whatever goes wrong (no memory home, a store that cannot be
opened, input that is not a hook's) is one line on stderr, the output is ``{}`` and the exit
status 0. The home is looked for from the session's folder (the input's ``cwd``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from backends import json_read
from memory.cli.base import Command, reads_the_journal
from memory.hooks import (
    PROMPT_LIMIT,
    PROMPT_THRESHOLD,
    PROMPT_TOKENS,
    SESSION_TOKENS,
    HookInput,
    hook_output,
    prompt_context,
    session_context,
)
from memory.output import Output, one_line
from memory.store.config import Config
from memory.store.home import is_home
from memory.store.project import project_folder, project_id
from memory.store.selection import open_backend

EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop",
          "session-end": "SessionEnd", "pre-compact": "PreCompact",
          "post-tool-use": "PostToolUse"}
CAPTURES = frozenset({"stop", "session-end", "pre-compact"})


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("event", choices=list(EVENTS),
                        help="which hook: %(choices)s (SessionStart, UserPromptSubmit, Stop, "
                        "SessionEnd, PreCompact, PostToolUse)")
    parser.add_argument("--tokens", type=int, metavar="N",
                        help=f"the most context to add, in tokens (default: {SESSION_TOKENS} "
                        f"for session-start, {PROMPT_TOKENS} for prompt)")
    parser.add_argument("--task", metavar="TEXT",
                        help="session-start: the context of this task instead of the project's "
                        "memory in brief")
    parser.add_argument("--threshold", type=float, default=PROMPT_THRESHOLD, metavar="X",
                        help="prompt: the score (0-1) a memory needs to be added "
                        "(default: %(default)s)")
    parser.add_argument("--limit", type=int, default=PROMPT_LIMIT, metavar="N",
                        help="prompt: at most N memories (default: %(default)s)")


async def hook(args: argparse.Namespace, config: Config) -> Output:
    event = EVENTS[args.event]
    context = message = ""
    try:
        raw = sys.stdin.buffer.read()
        if args.event in CAPTURES:
            message = await _capture(args, raw)
        else:
            context = await _answer(args, raw)
    # A hook must never break the session it serves, whatever the failure (a full disk, a
    # store another version wrote, a bug): the failure is reported and the session goes on.
    except Exception as exc:
        print(f"dualmem hook {args.event}: {one_line(exc)}", file=sys.stderr)
    document = hook_output(event, context, message)
    return Output(document, json_read.dumps(document))


def _config(args: argparse.Namespace, given: HookInput) -> Config | None:
    """The session's memory home (looked for from its folder); None, said on stderr, when it
    has none."""
    config = Config.from_env(home=args.home, backend=args.backend, embedder=args.embedder,
                             llm=args.llm, graph_url=args.graph_url,
                             graph_engine=args.graph_engine,
                             cwd=Path(given.cwd) if given.cwd else None)
    if not is_home(config.home):
        print(f"dualmem hook {args.event}: no memory home for {given.cwd or Path.cwd()} "
              "(run `dualmem init` in the project folder)", file=sys.stderr)
        return None
    return config


async def _capture(args: argparse.Namespace, raw: bytes) -> str:
    """Capture the session's transcript (and its subagents'); the line saying what was kept
    ('' for nothing new). Raises what went wrong."""
    from memory.capture.hook import capture_reply, capture_session
    from memory.capture.reading import CAPTURE_SECONDS

    given = HookInput.from_json(raw)
    config = _config(args, given)
    if config is None:
        return ""
    transcript = Path(given.transcript_path) if given.transcript_path else None
    if transcript is None or not transcript.exists():  # the reply is all there is to read
        return await capture_reply(config, given.last_assistant_message or "")
    deadline = time.monotonic() + CAPTURE_SECONDS
    return await capture_session(
        config, transcript, cwd=Path(given.cwd) if given.cwd else None,
        final=args.event == "session-end", deadline=deadline,
        last_message=given.last_assistant_message, warn=lambda line: print(
            f"dualmem hook {args.event}: {line}", file=sys.stderr))


async def _answer(args: argparse.Namespace, raw: bytes) -> str:
    """The context the hook adds ('' for none); raises what went wrong."""
    given = HookInput.from_json(raw)
    config = _config(args, given)
    if config is None:
        return ""
    from memory.tool_hook import told_files, tool_files

    project = project_id(config.home)
    root = Path(project_folder(config.home, given.cwd or None))
    if args.event == "post-tool-use":
        files = tool_files(given.tool_name, given.tool_input or {}, root)
        if not files:  # most tool calls: answered before any store is opened
            return ""
    else:
        from memory.workset import working_set

        files = working_set(root, given=told_files(config.home, given.session_id),
                            prompt=given.prompt)
    # A hook runs on every prompt: it never waits to open the graph, and never keeps a
    # long-running holder (an MCP server) out of it.
    store, selection = await open_backend(config, one_shot=True)
    if selection.notice:
        print(f"dualmem hook {args.event}: {selection.notice}", file=sys.stderr)
    try:
        if args.event == "session-start":
            overrides = guess = None
            if args.task:  # only a task's context applies system knowledge (and reads YAML)
                from memory.agent.knowledge import project_overrides
                from memory.store.area_guess import area_guesser, hooks_infer

                overrides = project_overrides(config.home)
                guess = area_guesser(config) if hooks_infer(config.home) else None
            return await session_context(store, project, tokens=args.tokens or SESSION_TOKENS,
                                         task=args.task, overrides=overrides, files=files,
                                         guess_areas=guess)
        if args.event == "post-tool-use":
            from memory.tool_hook import TOOL_TOKENS, tool_context

            journal = config.files_dir if selection.layer == "file" and not config.graph_url \
                else None  # the journal alone answers: its index, as the quick answer reads it
            return await tool_context(store, project, config.home, given.session_id, files,
                                      tokens=args.tokens or TOOL_TOKENS, journal=journal)
        return await prompt_context(store, project, given.prompt, threshold=args.threshold,
                                    limit=args.limit, tokens=args.tokens or PROMPT_TOKENS,
                                    files=files)
    finally:
        await store.aclose()


def _loopless(args: argparse.Namespace, config: Config) -> bool:
    # The prompt and tool hooks only read the journal (the tool hook writes its own note of
    # what the session was told); a capture writes the journal alone, awaiting nothing (an
    # LLM's summary is a process of its own), unless a team's server takes its writes. The
    # session start assembles context concurrently.
    if args.event in CAPTURES:
        return reads_the_journal(args, config) and config.graph_url is None
    return args.event in ("prompt", "post-tool-use") and reads_the_journal(args, config)


COMMANDS = {"hook": Command(_arguments, hook, _loopless)}
