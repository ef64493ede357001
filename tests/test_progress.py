from pmctx.progress import progress, progress_enabled


def test_progress_passes_items_through_and_respects_env(monkeypatch):
    assert list(progress(range(4), disable=True)) == [0, 1, 2, 3]
    assert list(progress(iter("ab"), total=2, disable=False)) == ["a", "b"]
    monkeypatch.setenv("PMCTX_QUICK", "1")
    assert not progress_enabled()
    assert progress_enabled(disable=False)
