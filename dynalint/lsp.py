"""`dynalint lsp`: a Language Server Protocol server over stdio (pygls 2).

What it does for an editor:
- diagnostics for Python documents on open and save, and on change after a short quiet period
  (debounced, default 300 ms), each with a link to its rule's docs (`codeDescription`);
- code actions: one quick fix per available autofix, "Disable CODE for this line" (adds or extends
  `# noqa: CODE`), and a `source.fixAll.dynalint` action (editors run it on save) built with
  `dynalint.autofix.fix_source`, computed only when the client resolves it;
- hover over a finding shows the rule's documentation;
- settings `select`, `extendSelect`, `ignore`, `unsafeFixes`, `config`, `debounceMs` from
  `initializationOptions` or `workspace/didChangeConfiguration` (flat or under a `dynalint` key).

Each document is linted with the `[tool.dynalint]` config nearest to it; settings apply on top.
Compile regions are decided across the open documents, so a helper module's functions are
reported when a model that calls them is open too (the CLI decides them across the files given).
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

import click

from dynalint import __version__, rule_url
from dynalint.findings import NOQA

try:  # the `lsp` extra; checked again when the command runs, with a clear message
    from lsprotocol import types as T
    from pygls.lsp.server import LanguageServer
    from pygls.uris import to_fs_path

    _IMPORT_ERROR: Optional[ImportError] = None
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    T = None  # type: ignore[assignment]
    LanguageServer = object  # type: ignore[assignment,misc]
    _IMPORT_ERROR = exc

log = logging.getLogger("dynalint.lsp")

SOURCE = "dynalint"
FIX_ALL_KIND = "source.fixAll.dynalint"
DEFAULT_DEBOUNCE_MS = 300
PYTHON_SUFFIXES = (".py", ".pyi")
_SEVERITY = {"error": 1, "warning": 2, "info": 3}  # LSP DiagnosticSeverity values


# ------------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    config: Optional[str] = None  # a config file to use instead of the nearest one
    debounce_ms: int = DEFAULT_DEBOUNCE_MS

    def overrides(self):
        from dynalint.config import Overrides

        return Overrides(select=self.select, extend_select=self.extend_select, ignore=self.ignore)


_SETTING_KEYS = {
    "select": "select",
    "extendselect": "extend_select",
    "ignore": "ignore",
    "unsafefixes": "unsafe_fixes",
    "config": "config",
    "configuration": "config",
    "debouncems": "debounce_ms",
}


def parse_settings(raw: Any, base: Settings = Settings()) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON (flat, or under "dynalint"); unknown or invalid entries are
    reported and skipped so that one typo does not switch the server off."""
    from dynalint.config import ConfigError, validate_codes

    if isinstance(raw, dict) and isinstance(raw.get("dynalint"), dict):
        raw = raw["dynalint"]
    if not isinstance(raw, dict):
        return base, []
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        attr = _SETTING_KEYS.get(str(key).replace("-", "").replace("_", "").lower())
        if attr is None:
            problems.append(f"unknown setting `{key}`")
            continue
        try:
            values[attr] = _setting_value(attr, key, value, validate_codes)
        except (ConfigError, TypeError, ValueError) as exc:
            problems.append(str(exc))
    from dataclasses import replace

    return replace(base, **values), problems


def _setting_value(attr: str, key: str, value: Any, validate_codes) -> Any:
    if attr in ("select", "extend_select", "ignore"):
        if isinstance(value, str):  # "DYN101,DYN2" is accepted too
            value = [v for v in value.split(",") if v.strip()]
        return validate_codes(key, value or [])
    if attr == "unsafe_fixes":
        if not isinstance(value, bool):
            raise TypeError(f"setting `{key}` must be true or false")
        return value
    if attr == "debounce_ms":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise TypeError(f"setting `{key}` must be a number of milliseconds")
        return int(value)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"setting `{key}` must be a path")
    return value or None


# ------------------------------------------------------------------------------------------------
# Pure helpers: positions, noqa comments, minimal edits


def rows_ending_in_string(text: str) -> set[int]:
    """1-based rows whose line break lies inside a string or after a backslash: a comment
    cannot be appended there."""
    import io
    import tokenize

    rows: set[int] = set()
    lines = text.splitlines()
    for row, line in enumerate(lines, start=1):
        if line.rstrip().endswith("\\"):
            rows.add(row)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] != tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.DEDENT):
                rows.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return rows


def noqa_edit(lines: list[str], row: int, code: str, blocked: set[int]) -> Optional[tuple[int, int, str]]:
    """How to suppress code on 1-based row: (start, end, new text) in code points within that
    line, or None when the line already suppresses it or cannot take a comment."""
    if row < 1 or row > len(lines) or row in blocked:
        return None
    line = lines[row - 1].rstrip("\r\n")
    m = NOQA.search(line)
    if m is not None:
        codes = m.group("codes")
        if codes is None:  # a bare `# noqa` already silences everything
            return None
        existing = [c.upper() for c in re.split(r"[,\s]+", codes) if c]
        if code in existing:
            return None
        return m.start("codes"), m.end("codes"), ", ".join(existing + [code])
    end = len(line.rstrip())
    return end, len(line), f"  # noqa: {code}"


def line_edits(old: str, new: str) -> list[tuple[int, int, str]]:
    """Replace whole-line ranges [start, end) of old by text so that it becomes new; a few small
    edits keep the editor's cursor and folds where a whole-document replace would not."""
    import difflib

    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append((i1, i2, "".join(b[j1:j2])))
    return out


# ------------------------------------------------------------------------------------------------
# The server


@dataclass
class DocState:
    """The last lint of a document: what diagnostics and code actions are computed from."""

    uri: str
    version: Optional[int]
    text: str
    filename: str
    config: Any
    findings: list = field(default_factory=list)

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines(keepends=True)


class DynalintServer(LanguageServer):  # type: ignore[misc,valid-type]
    def __init__(self, debounce_ms: Optional[int] = None):
        super().__init__("dynalint", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Incremental)
        self.settings = Settings(debounce_ms=debounce_ms if debounce_ms is not None else DEFAULT_DEBOUNCE_MS)
        self.tracked: set[str] = set()  # open Python documents
        self.states: dict[str, DocState] = {}  # their last lint
        self.pending_problems: list[str] = []
        self._timers: dict[str, asyncio.Task] = {}
        # One lint at a time, off the event loop so that requests are still answered.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dynalint-lint")
        self._summaries: dict[str, tuple[tuple, Any]] = {}  # uri -> (key, FileSummary)
        self._configs: dict[tuple, Any] = {}
        self._config_errors_shown: set[str] = set()

    # -- configuration --------------------------------------------------------------------------
    def update_settings(self, raw: Any) -> None:
        self.settings, problems = parse_settings(raw, self.settings)
        self._configs.clear()
        for p in problems:
            self.notify_user(f"dynalint: {p}", T.MessageType.Warning)

    def notify_user(self, message: str, kind=None) -> None:
        kind = kind or T.MessageType.Error
        log.warning(message)
        try:
            self.window_show_message(T.ShowMessageParams(type=kind, message=message))
        except Exception:  # before initialize there is no writer yet
            self.pending_problems.append(message)

    def config_for(self, path: Optional[Path]):
        """The config nearest path (or the settings' file), with settings' selection on top."""
        from dynalint.config import Config, ConfigError, find_config, load_config_file

        if self.settings.config:
            source: Optional[Path] = Path(self.settings.config).expanduser()
            if not source.is_absolute() and self._root() is not None:
                source = self._root() / source
        else:
            start = path if path is not None else (self._root() or Path.cwd())
            source = find_config(start)
        key = (source, self.settings)
        cfg = self._configs.get(key)
        if cfg is None:
            try:
                base = load_config_file(source) if source is not None else Config()
            except ConfigError as exc:
                if str(exc) not in self._config_errors_shown:
                    self._config_errors_shown.add(str(exc))
                    self.notify_user(f"dynalint: {exc}; using the default settings")
                base = Config()
            cfg = base.with_overrides(self.settings.overrides())
            self._configs[key] = cfg
        return cfg

    def forget_configs(self) -> None:
        from dynalint.config import clear_config_cache

        clear_config_cache()
        self._configs.clear()
        self._config_errors_shown.clear()

    def _root(self) -> Optional[Path]:
        try:
            root = self.workspace.root_path
        except RuntimeError:
            return None
        return Path(root) if root else None

    # -- linting --------------------------------------------------------------------------------
    def is_lintable(self, uri: str, language_id: Optional[str] = None) -> bool:
        if language_id is not None and language_id != "python":
            return False
        path = to_fs_path(uri)
        return path is None or path.endswith(PYTHON_SUFFIXES) or language_id == "python"

    def lint(self, uri: str, text: str, version: Optional[int]) -> DocState:
        """Runs in the lint thread: the findings for one document snapshot."""
        from dynalint.run.discovery import is_excluded
        from dynalint.run.engine import select_findings

        fs_path = to_fs_path(uri)
        path = Path(fs_path) if fs_path else None
        config = self.config_for(path)
        filename = str(path) if path is not None else "untitled.py"
        state = DocState(uri=uri, version=version, text=text, filename=filename, config=config)
        if path is not None and is_excluded(path, config):
            return state
        target = self._summary(uri, filename, text, config)
        context = [s for u, (_, s) in list(self._summaries.items()) if u != uri and u in self.tracked]
        findings = select_findings([target, *context], config)
        state.findings = [f for f in findings if f.filename == filename]
        return state

    def _summary(self, uri: str, filename: str, text: str, config):
        from dynalint.run.engine import SourceFile, analyze_files, module_name_for

        key = (text, config.cache_key(), filename)
        hit = self._summaries.get(uri)
        if hit is not None and hit[0] == key:
            return hit[1]
        path = Path(filename)
        module, is_package = module_name_for(path, [config.root / s for s in config.src])
        (summary,) = analyze_files([SourceFile(path, filename, module, is_package, text)], config, jobs=1)
        self._summaries[uri] = (key, summary)
        return summary

    async def lint_now(self, uri: str) -> Optional[DocState]:
        """Lint the document as it is now and publish; None if it is closed meanwhile."""
        if uri not in self.tracked or uri not in self.workspace.text_documents:
            return None
        doc = self.workspace.get_text_document(uri)
        text, version = doc.source, doc.version
        loop = asyncio.get_running_loop()
        try:
            state = await loop.run_in_executor(self._executor, self.lint, uri, text, version)
        except Exception as exc:  # a crash in one file must not take the server down
            log.exception("lint failed for %s", uri)
            self.notify_user(f"dynalint: internal error on {uri}: {type(exc).__name__}: {exc}")
            return None
        if uri not in self.tracked or uri not in self.workspace.text_documents:
            return None
        current = self.workspace.get_text_document(uri)
        self.states[uri] = state
        if current.version == version:  # stale results are never shown
            self.publish(state)
            await self._refresh_others(uri)
        return state

    async def _refresh_others(self, changed: str) -> None:
        """A changed document can put other open documents' functions in or out of a compile
        region (a model now calls a helper): recompute theirs from cached analyses, cheaply."""
        loop = asyncio.get_running_loop()
        for uri, old in list(self.states.items()):
            if uri == changed or uri not in self.tracked or uri in self._timers and not self._timers[uri].done():
                continue
            new = await loop.run_in_executor(self._executor, self.lint, uri, old.text, old.version)
            if uri in self.tracked and self.states.get(uri) is old:
                self.states[uri] = new
                if [f.sort_key() for f in new.findings] != [f.sort_key() for f in old.findings]:
                    self.publish(new)

    def schedule(self, uri: str, delay_s: float) -> None:
        """(Re)start the quiet-period timer of a document: only the last edit is linted."""
        old = self._timers.pop(uri, None)
        if old is not None:
            old.cancel()
        self._timers[uri] = asyncio.ensure_future(self._lint_after(uri, delay_s))

    async def _lint_after(self, uri: str, delay_s: float) -> None:
        try:
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            await self.lint_now(uri)
        except asyncio.CancelledError:
            pass

    def relint_all(self) -> None:
        for uri in list(self.tracked):
            self.schedule(uri, 0)

    def close(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self.tracked.discard(uri)
        self.states.pop(uri, None)
        self._summaries.pop(uri, None)
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def current_state(self, uri: str) -> Optional[DocState]:
        """The lint of the document's current text (linting now if the last one is stale)."""
        if uri not in self.workspace.text_documents:
            return None
        doc = self.workspace.get_text_document(uri)
        state = self.states.get(uri)
        if state is not None and state.version == doc.version and state.text == doc.source:
            return state
        return await self.lint_now(uri)

    # -- LSP shapes ------------------------------------------------------------------------------
    def _codec(self):
        return self.workspace.position_codec

    def position(self, lines: list[str], row: int, column: int):
        """1-based row and code-point column -> LSP position in the client's encoding."""
        return self._codec().position_to_client_units(lines, T.Position(line=row - 1, character=max(0, column - 1)))

    def range_of(self, lines: list[str], row: int, column: int, end_row: int, end_column: int):
        return T.Range(start=self.position(lines, row, column), end=self.position(lines, end_row, end_column))

    def diagnostic(self, state: DocState, f):
        from dynalint.output import severity

        return T.Diagnostic(
            range=self.range_of(state.lines, f.row, f.column, f.end_row, f.end_column),
            message=f.message,
            severity=T.DiagnosticSeverity(_SEVERITY[severity(f, state.config)]),
            code=f.code,
            code_description=T.CodeDescription(href=rule_url(f.code)),
            source=SOURCE,
        )

    def publish(self, state: DocState) -> None:
        diagnostics = [self.diagnostic(state, f) for f in state.findings]
        self.text_document_publish_diagnostics(
            T.PublishDiagnosticsParams(uri=state.uri, diagnostics=diagnostics, version=state.version)
        )

    def text_edit(self, lines: list[str], row: int, column: int, end_row: int, end_column: int, text: str):
        return T.TextEdit(range=self.range_of(lines, row, column, end_row, end_column), new_text=text)

    def code_actions(self, state: DocState, params) -> list:
        from dynalint.fixes.apply import applicable
        first, last = params.range.start.line + 1, params.range.end.line + 1
        unsafe = self.settings.unsafe_fixes
        lines = state.lines
        blocked: Optional[set[int]] = None
        fixes, noqas = [], []
        for f in state.findings:
            if f.end_row < first or f.row > last:
                continue
            diag = self.diagnostic(state, f)
            if applicable(f, unsafe):
                edits = [self.text_edit(lines, e.row, e.column, e.end_row, e.end_column, e.content) for e in f.fix.edits]
                suffix = " (unsafe)" if f.fix.applicability != "safe" else ""
                fixes.append(
                    T.CodeAction(
                        title=f"{f.code}: {f.fix.message}{suffix}",
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=f.fix.applicability == "safe",
                        edit=T.WorkspaceEdit(changes={state.uri: edits}),
                    )
                )
            if blocked is None:
                blocked = rows_ending_in_string(state.text)
            noqa = noqa_edit(lines, f.row, f.code, blocked)
            if noqa is not None:
                start, end, text = noqa
                edit = self.text_edit(lines, f.row, start + 1, f.row, end + 1, text)
                noqas.append(
                    T.CodeAction(
                        title=f"Disable {f.code} for this line",
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=T.WorkspaceEdit(changes={state.uri: [edit]}),
                    )
                )
        actions = fixes + _unique_titles(noqas)
        if any(applicable(f, unsafe) for f in state.findings):
            actions.append(
                T.CodeAction(
                    title="dynalint: fix all auto-fixable problems",
                    kind=FIX_ALL_KIND,
                    data={"uri": state.uri, "version": state.version},
                )
            )
        only = [_kind(k) for k in params.context.only or ()]
        if only:
            actions = [a for a in actions if any(_kind(a.kind) == k or _kind(a.kind).startswith(f"{k}.") for k in only)]
        return actions

    def fix_all_edits(self, state: DocState) -> list:
        """Text edits that apply every applicable fix (runs in the lint thread)."""
        from dynalint.autofix import fix_source
        context = [self._source_file(s) for u, s in list(self.states.items()) if u != state.uri and u in self.tracked]
        result = fix_source(state.text, state.filename, state.config, unsafe=self.settings.unsafe_fixes, context=context)
        for e in result.errors:
            log.warning(e)
        if not result.changed:
            return []
        lines = state.lines
        edits = []
        for start, end, text in line_edits(state.text, result.text):
            rng = T.Range(start=self._line_start(lines, start), end=self._line_start(lines, end))
            edits.append(T.TextEdit(range=rng, new_text=text))
        return edits

    @staticmethod
    def _source_file(state: DocState):
        """Another open document, as context for compile regions across files."""
        from dynalint.run.engine import SourceFile, module_name_for

        path = Path(state.filename)
        module, is_package = module_name_for(path, [state.config.root / s for s in state.config.src])
        return SourceFile(path, state.filename, module, is_package, state.text)

    def _line_start(self, lines: list[str], index: int):
        """Start of 0-based line index; past the end means the end of the text."""
        if index < len(lines):
            return T.Position(line=index, character=0)
        if lines and not lines[-1].endswith(("\n", "\r")):
            last = lines[-1]
            return T.Position(line=len(lines) - 1, character=self._codec().client_num_units(last))
        return T.Position(line=len(lines), character=0)

    def hover(self, state: DocState, position) -> Optional[Any]:
        from dynalint.lint.rules import rule_by_code

        lines = state.lines
        parts = []
        for f in state.findings:
            rng = self.range_of(lines, f.row, f.column, f.end_row, f.end_column)
            if _contains(rng, position):
                rule = rule_by_code(f.code)
                name = f" ({rule.name})" if rule else ""
                docs = f"\n\n{rule.docs()}" if rule else ""
                parts.append(f"**{f.code}**{name}: {f.message}\n\n[Rule docs]({rule_url(f.code)}){docs}")
        if not parts:
            return None
        return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))


def _kind(kind) -> str:
    """A code action kind as its protocol string (lsprotocol gives enum members or plain strings)."""
    return getattr(kind, "value", kind)


def _contains(rng, pos) -> bool:
    after_start = (pos.line, pos.character) >= (rng.start.line, rng.start.character)
    before_end = (pos.line, pos.character) <= (rng.end.line, rng.end.character)
    return after_start and before_end


def _unique_titles(actions: list) -> list:
    seen, out = set(), []
    for a in actions:
        if a.title not in seen:
            seen.add(a.title)
            out.append(a)
    return out


def create_server(debounce_ms: Optional[int] = None) -> DynalintServer:
    server = DynalintServer(debounce_ms)

    @server.feature(T.INITIALIZE)
    def on_initialize(ls: DynalintServer, params: T.InitializeParams):
        if params.initialization_options is not None:
            ls.settings, problems = parse_settings(params.initialization_options, ls.settings)
            ls.pending_problems += [f"dynalint: {p}" for p in problems]

    @server.feature(T.INITIALIZED)
    def on_initialized(ls: DynalintServer, params: T.InitializedParams):
        for message in ls.pending_problems:
            ls.notify_user(message, T.MessageType.Warning)
        ls.pending_problems.clear()

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DynalintServer, params: T.DidOpenTextDocumentParams):
        doc = params.text_document
        if ls.is_lintable(doc.uri, doc.language_id):
            ls.tracked.add(doc.uri)
            ls.schedule(doc.uri, 0)

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DynalintServer, params: T.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        if uri in ls.tracked:
            ls.schedule(uri, ls.settings.debounce_ms / 1000)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE, T.SaveOptions(include_text=False))
    def did_save(ls: DynalintServer, params: T.DidSaveTextDocumentParams):
        uri = params.text_document.uri
        path = to_fs_path(uri) or ""
        if Path(path).name in ("pyproject.toml", "dynalint.toml"):
            ls.forget_configs()
            ls.relint_all()
        elif uri in ls.tracked:
            ls.schedule(uri, 0)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DynalintServer, params: T.DidCloseTextDocumentParams):
        if params.text_document.uri in ls.tracked:
            ls.close(params.text_document.uri)

    @server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: DynalintServer, params: T.DidChangeConfigurationParams):
        ls.update_settings(params.settings)
        ls.relint_all()

    @server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: DynalintServer, params: T.DidChangeWatchedFilesParams):
        if any(Path(to_fs_path(c.uri) or "").name in ("pyproject.toml", "dynalint.toml") for c in params.changes):
            ls.forget_configs()
            ls.relint_all()

    @server.feature(
        T.TEXT_DOCUMENT_CODE_ACTION,
        T.CodeActionOptions(
            code_action_kinds=[T.CodeActionKind.QuickFix, T.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )
    async def code_action(ls: DynalintServer, params: T.CodeActionParams):
        state = await ls.current_state(params.text_document.uri)
        if state is None:
            return None
        actions = ls.code_actions(state, params)
        if not _client_resolves_edits(ls):  # then the fix-all edit must come with the action
            for action in actions:
                if action.kind == FIX_ALL_KIND:
                    await _resolve_fix_all(ls, action)
        return actions

    @server.feature(T.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: DynalintServer, action: T.CodeAction):
        if action.kind == FIX_ALL_KIND and action.edit is None:
            await _resolve_fix_all(ls, action)
        return action

    @server.feature(T.TEXT_DOCUMENT_HOVER)
    async def hover(ls: DynalintServer, params: T.HoverParams):
        state = await ls.current_state(params.text_document.uri)
        return ls.hover(state, params.position) if state is not None else None

    @server.feature(T.SHUTDOWN)
    def on_shutdown(ls: DynalintServer, *args):
        for timer in ls._timers.values():
            timer.cancel()
        ls._executor.shutdown(wait=False, cancel_futures=True)

    return server


def _client_resolves_edits(ls: DynalintServer) -> bool:
    caps = ls.client_capabilities
    try:
        props = caps.text_document.code_action.resolve_support.properties
    except AttributeError:
        return False
    return "edit" in (props or [])


async def _resolve_fix_all(ls: DynalintServer, action) -> None:
    uri = (action.data or {}).get("uri")
    state = await ls.current_state(uri) if uri else None
    if state is None:
        return
    loop = asyncio.get_running_loop()
    edits = await loop.run_in_executor(ls._executor, ls.fix_all_edits, state)
    action.edit = T.WorkspaceEdit(changes={uri: edits})


# ------------------------------------------------------------------------------------------------
# Command


@click.command(name="lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default; accepted for clients that pass it).")
@click.option(
    "--debounce-ms",
    type=click.IntRange(min=0),
    default=None,
    help=f"Quiet period after an edit before linting (default {DEFAULT_DEBOUNCE_MS}).",
)
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the server's log here.")
@click.option("-v", "--verbose", is_flag=True, help="Log debugging detail.")
def lsp(stdio: bool, debounce_ms: Optional[int], log_file: Optional[str], verbose: bool) -> None:
    """Start the dynalint language server over stdio (for editors)."""
    if _IMPORT_ERROR is not None:
        click.echo(
            f"dynalint: error: the language server needs pygls ({_IMPORT_ERROR}); "
            "install it with `pip install 'dynalint[lsp]'`",
            err=True,
        )
        sys.exit(2)
    logging.basicConfig(
        filename=log_file,
        level=logging.DEBUG if verbose else logging.INFO if log_file else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    server = create_server(debounce_ms)
    # stdout carries the protocol only: anything printed by accident goes to stderr instead.
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    server.start_io(sys.stdin.buffer, protocol_out)


if __name__ == "__main__":  # `python -m dynalint.lsp`
    lsp()
