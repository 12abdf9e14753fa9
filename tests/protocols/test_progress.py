"""Stage lines reach a listener only while one listens, and a loop says at most every few
seconds plus its last step."""

from __future__ import annotations

from ldpgraph.protocols import progress


def test_silent_without_a_listener():
    assert not progress.active()
    assert list(progress.steps(range(3), "epoch")) == [0, 1, 2]
    progress.stage("nobody hears this")  # no error, no output


def test_listener_hears_stages_and_the_last_step():
    heard: list[str] = []
    with progress.listening(heard.append):
        assert progress.active()
        progress.stage("APPR on 10 rows")
        # every_s large: only the final step says
        assert list(progress.steps(range(5), "DP-SGD epoch", every_s=1e9)) == list(range(5))
        # every_s zero: every step says
        list(progress.steps(iter(range(2)), "lane", total=2, every_s=0.0))
    assert heard == ["APPR on 10 rows", "DP-SGD epoch 5/5", "lane 1/2", "lane 2/2"]
    assert not progress.active()


def test_listening_none_silences_an_outer_listener():
    heard: list[str] = []
    with progress.listening(heard.append):
        with progress.listening(None):
            progress.stage("hidden")
        progress.stage("shown")
    assert heard == ["shown"]
