"""The explorer's footer (tui/widgets/footer.py): binding changes that come before a refresh compose it
once, with the bindings as they are then; a change after that composes it again."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer as TextualFooter

from kerneldiff.tui.widgets.footer import Footer


class KeysApp(App):
    BINDINGS = [Binding("x", "noop('x')", "Ex"), Binding("y", "noop('y')", "Why")]

    def compose(self) -> ComposeResult:
        yield Footer()

    def action_noop(self, key: str) -> None:
        pass


def _shown(app) -> list[str]:
    return sorted(k.description for k in app.query_one(Footer).query("FooterKey") if k.description != "palette")


async def test_changes_before_a_refresh_compose_the_footer_once(monkeypatch):
    composed = []
    real = TextualFooter.recompose

    async def counting(self):
        composed.append(1)
        await real(self)

    monkeypatch.setattr(TextualFooter, "recompose", counting)
    app = KeysApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert _shown(app) == ["Ex", "Why"]
        composed.clear()
        app.bind("z", "noop('z')", description="Zed")   # a key added, then four more changes at once
        for _ in range(4):
            app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert len(composed) == 1
        assert _shown(app) == ["Ex", "Why", "Zed"]
        composed.clear()
        app.bind("w", "noop('w')", description="Double")   # a later change composes it again
        app.screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert len(composed) == 1 and _shown(app) == ["Double", "Ex", "Why", "Zed"]
