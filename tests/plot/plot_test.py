"""Tests of experiments/plot.py: paging (no panel dropped), the critical delay, which figures a
results folder gets and why others are not drawn. Run by ctest (plot_py); skipped (exit 77)
without matplotlib."""
import importlib.util
import json
import os
import sys
import tempfile
import unittest

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("no matplotlib: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("plot", os.path.join(HERE, "..", "..", "experiments", "plot.py"))
plot = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(plot)


def write_results(folder, axes, times, iterations=1, algorithms=("ring", "stragglar")):
    """A results folder as `stragglesim run` writes it, reduced to what plot.py reads.
    `times(values, label, iteration)` gives each run's time in seconds."""
    points = []
    rows = []
    combos = [[]]
    for a in axes:
        combos = [c + [v] for c in combos for v in a["values"]]
    for k, combo in enumerate(combos):
        values = {a["key"]: v for a, v in zip(axes, combo)}
        mean = {label: sum(times(values, label, i) for i in range(iterations)) / iterations for label in algorithms}
        points.append({"point": k, "values": values,
                       "summary": {label: {"speedup": mean["ring"] / mean[label]} for label in algorithms}})
        for label in algorithms:
            for i in range(iterations):
                t = times(values, label, i)
                rows.append(f"{k},{label},{i},{t},{t}")
    result = {"algorithms": [{"label": label} for label in algorithms], "axes": axes, "baseline": "ring",
              "experiment": {"name": "t"}, "iterations": iterations, "metric": "completion", "points": points}
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(result, f)
    with open(os.path.join(folder, "results.csv"), "w") as f:
        f.write("point,label,iteration,time_s,after_last_arrival_s\n" + "\n".join(rows) + "\n")


SIZE = {"key": "size", "values": ["1MiB", "64MiB", "1GiB"], "numeric": [2.0 ** 20, 2.0 ** 26, 2.0 ** 30],
        "unit": "B", "straggler_delay": False}
DELAY = {"key": "delay", "values": ["0", "1ms", "2ms", "4ms"], "numeric": [0, 1e-3, 2e-3, 4e-3], "unit": "s",
         "straggler_delay": True}


def stragglar_wins_late(values, label, _i):
    """Ring takes 2 ms + delay; StragglAR 2.5 ms + delay / 2: it wins from a 1 ms delay on."""
    d = float(dict(zip(DELAY["values"], DELAY["numeric"]))[values["delay"]])
    return 2e-3 + d if label == "ring" else 2.5e-3 + d / 2


class Paging(unittest.TestCase):
    def test_every_item_on_some_page_and_groups_kept(self):
        for n in range(1, 60):
            for group in (1, 2, 3, 4):
                pages = plot.paginate(list(range(n)), 12, group)
                self.assertEqual([x for p in pages for x in p], list(range(n)))
                self.assertTrue(all(len(p) <= 12 for p in pages))
                if n > 12 and n % group == 0:
                    self.assertTrue(all(len(p) % group == 0 for p in pages), (n, group, pages))

    def test_pages_are_balanced(self):
        self.assertEqual([len(p) for p in plot.paginate(list(range(16)), 12, 2)], [8, 8])
        self.assertEqual([len(p) for p in plot.paginate(list(range(13)), 12)], [7, 6])


class CriticalDelay(unittest.TestCase):
    def test_interpolated_between_the_last_loss_and_the_first_win(self):
        self.assertAlmostEqual(plot.critical_delay([0, 1, 2], [0.5, 0.9, 1.1]), 1.5)

    def test_a_win_that_does_not_last_does_not_count(self):
        self.assertAlmostEqual(plot.critical_delay([0, 1, 2, 3], [1.2, 0.8, 0.9, 1.1]), 2.5)

    def test_ties_are_not_wins(self):
        self.assertIsNone(plot.critical_delay([0, 1, 2], [1.0, 1.0, 1.0]))
        self.assertIsNone(plot.critical_delay([0, 1, 2], [1.5, 1.2, 0.9]))

    def test_winning_everywhere(self):
        self.assertEqual(plot.critical_delay([0, 1, 2], [1.1, 1.2, 1.3]), 0)


class Figures(unittest.TestCase):
    def run_plot(self, folder):
        from io import StringIO
        out, old = StringIO(), sys.stdout
        sys.stdout = out
        try:
            rc = plot.main(["plot.py", folder])
        finally:
            sys.stdout = old
        self.assertEqual(rc, 0)
        return out.getvalue()

    def test_size_by_delay_gets_a_heatmap_with_the_critical_delay(self):
        with tempfile.TemporaryDirectory() as d:
            write_results(d, [SIZE, DELAY], stragglar_wins_late)
            out = self.run_plot(d)
            for stem in ("speedup_vs_size", "speedup_vs_delay", "speedup_heatmap"):
                self.assertTrue(os.path.getsize(os.path.join(d, stem + ".png")) > 1000, out)
            self.assertIn("no speedup_cdf: 1 iteration per run", out)
        # ring 2 ms + d, stragglar 2.5 ms + d/2: equal at d = 1 ms (a tie), wins after it.
        self.assertAlmostEqual(plot.critical_delay(DELAY["numeric"], [(2e-3 + d) / (2.5e-3 + d / 2)
                                                                     for d in DELAY["numeric"]]), 1e-3, places=9)

    def test_more_than_twelve_panels_go_on_pages_none_dropped(self):
        ranks = {"key": "ranks", "values": [str(r) for r in (4, 8, 16, 32, 64, 128, 256)],
                 "numeric": [4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0], "unit": "", "straggler_delay": False}
        with tempfile.TemporaryDirectory() as d:
            write_results(d, [ranks, DELAY], lambda v, label, i: stragglar_wins_late(v, label, i) * int(v["ranks"]))
            out = self.run_plot(d)
            # speedup_vs_delay: one panel per rank count (7); speedup_vs_ranks: one per delay (4)
            self.assertTrue(os.path.exists(os.path.join(d, "speedup_vs_delay.png")))
            self.assertFalse(os.path.exists(os.path.join(d, "speedup_vs_delay_2.png")))
        with tempfile.TemporaryDirectory() as d:
            many = dict(ranks, values=[str(r) for r in range(4, 30)], numeric=[float(r) for r in range(4, 30)])
            write_results(d, [many, DELAY], stragglar_wins_late)
            out = self.run_plot(d)
            # 26 rank counts: speedup_vs_delay needs 3 pages of at most 12 panels
            for stem in ("speedup_vs_delay", "speedup_vs_delay_2", "speedup_vs_delay_3"):
                self.assertTrue(os.path.exists(os.path.join(d, stem + ".png")), out)
            self.assertFalse(os.path.exists(os.path.join(d, "speedup_vs_delay_4.png")))

    def test_identical_iterations_get_no_cdf_random_ones_do(self):
        with tempfile.TemporaryDirectory() as d:
            write_results(d, [DELAY], stragglar_wins_late, iterations=5)
            out = self.run_plot(d)
            self.assertIn("no speedup_cdf: the 5 iterations of each run are identical", out)
            self.assertFalse(os.path.exists(os.path.join(d, "speedup_cdf.png")))
        with tempfile.TemporaryDirectory() as d:
            write_results(d, [DELAY], lambda v, label, i: stragglar_wins_late(v, label, i) * (1 + 0.1 * i),
                          iterations=5)
            out = self.run_plot(d)
            self.assertTrue(os.path.exists(os.path.join(d, "speedup_cdf.png")), out)

    def test_a_categorical_axis_also_gets_absolute_times(self):
        ecmp = {"key": "topology.ecmp", "values": ["false", "true"], "numeric": [None, None], "unit": "",
                "straggler_delay": False}
        with tempfile.TemporaryDirectory() as d:
            write_results(d, [ecmp, DELAY], stragglar_wins_late)
            self.run_plot(d)
            self.assertTrue(os.path.exists(os.path.join(d, "time_vs_topology_ecmp.png")))
            self.assertTrue(os.path.exists(os.path.join(d, "speedup_vs_topology_ecmp.png")))

    def test_tick_labels_of_neighbouring_panels_do_not_overlap(self):
        # Four panels in a row over 256KiB..4GiB, the adaptive experiment's axis: the last label
        # of one panel ("4GiB") and the first of the next ("256KiB") must not touch.
        sizes = ["256KiB", "1MiB", "4MiB", "16MiB", "64MiB", "256MiB", "1GiB", "4GiB"]
        axis = plot.XAxis({"key": "size", "values": sizes,
                           "numeric": [float(2 ** (18 + 2 * i)) for i in range(len(sizes))],
                           "unit": "B", "straggler_delay": False})
        fig = plot.Figure(4, "t", [], [])
        for ax in fig.axes:
            ax.plot(axis.positions, [1.0] * len(sizes))
            axis.apply(ax, fig.panel_w)
        fig.finish([], [])
        renderer = fig.fig.canvas.get_renderer()
        spans = []
        for ax in fig.axes:
            boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
            self.assertGreaterEqual(len(boxes), 2)
            spans.append((min(b.x0 for b in boxes), max(b.x1 for b in boxes)))
        for (_, right), (left, _) in zip(spans, spans[1:]):
            self.assertLess(right, left, spans)

    def test_every_swept_delay_labelled_and_a_compact_legend(self):
        # Issue 43: multi_node_hierarchical's delay axis (0 to 100ms) in four panels: side by
        # side one of them finds no room; upright, every value is labelled, none overlapping, and the
        # figure leaves them room. The legend of 7 entries is 2 rows of 4, not a row across the
        # figure.
        delays = ["0", "2ms", "5ms", "20ms", "100ms"]
        axis = plot.XAxis({"key": "stragglers.delay", "values": delays,
                           "numeric": [0.0, 2e-3, 5e-3, 2e-2, 1e-1], "unit": "s", "straggler_delay": True})
        self.assertLess(len(axis.fitting_labels(plot.TWO_COLUMNS_IN / 4)), len(delays))  # side by side
        entries = ["ring (baseline)"] + [f"algorithm{i}" for i in range(6)]
        fig = plot.Figure(4, "t", [], entries)
        self.assertEqual(fig.ncol, 4)
        lines = []
        for ax in fig.axes:
            for j in range(len(entries)):
                (h,) = ax.plot(axis.positions, [1.0 + j] * len(delays))
                lines.append(h)
            fig.xtick_in = max(fig.xtick_in, axis.apply(ax, fig.panel_w))
        self.assertGreater(fig.xtick_in, plot.LINE_IN)
        fig.finish(lines[:len(entries)], entries)
        renderer = fig.fig.canvas.get_renderer()
        for ax in fig.axes:
            labels = [t for t in ax.get_xticklabels() if t.get_text()]
            self.assertEqual([t.get_text() for t in labels], delays)
            boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
            for a, b in zip(boxes, boxes[1:]):
                self.assertLess(a.x1, b.x0, (a, b))
            # Inside the figure, below the panel.
            panel = ax.get_window_extent(renderer)
            self.assertGreaterEqual(min(b.y0 for b in boxes), 0)
            self.assertLessEqual(max(b.y1 for b in boxes), panel.y0)
        legend = fig.fig.legends[0].get_window_extent(renderer)
        self.assertLess(legend.width, 0.8 * fig.fig.bbox.width)
        plot.plt.close(fig.fig)

    def test_every_swept_delay_labelled_in_a_dense_sweep(self):
        # Issue 43: paper_8gpu_delay's 16 delays (0 to 20ms) in 8 panels. On the symlog axis
        # 1.5ms..4ms crowd together (2ms was unlabelled) and no panel width labels them all, so
        # they are drawn evenly spaced (said in the axis title), in 2 columns, each labelled
        # and none overlapping.
        delays = ["0", "250us", "500us", "1ms", "1.5ms", "2ms", "2.5ms", "3ms", "3.5ms", "4ms", "5ms",
                  "6ms", "8ms", "10ms", "15ms", "20ms"]
        seconds = [0.0] + [float(d[:-2]) * (1e-6 if d.endswith("us") else 1e-3) for d in delays[1:]]
        axis = plot.XAxis({"key": "delay", "values": delays, "numeric": seconds, "unit": "s",
                           "straggler_delay": True})
        self.assertEqual(axis.scale, "symlog")
        cols = axis.columns(8)
        self.assertEqual(cols, 2)
        self.assertIn("evenly spaced", axis.title)
        fig = plot.Figure(8, "t", [], ["ring (baseline)", "stragglar"], cols=cols)
        self.assertEqual((fig.rows, fig.cols), (4, 2))
        for ax in fig.axes:
            ax.plot(axis.positions, [1.0] * len(delays))
            fig.xtick_in = max(fig.xtick_in, axis.apply(ax, fig.panel_w))
        fig.finish([], [])
        renderer = fig.fig.canvas.get_renderer()
        for ax in fig.axes:
            labels = [t for t in ax.get_xticklabels() if t.get_text()]
            self.assertEqual([t.get_text() for t in labels], delays)
            boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
            for a, b in zip(boxes, boxes[1:]):
                self.assertLess(a.x1, b.x0, (a, b))
        plot.plt.close(fig.fig)
        # Where every value fits as it lies, the axis and the layout stay as they were.
        few = plot.XAxis({"key": "delay", "values": ["0", "2ms", "5ms", "20ms", "100ms"],
                          "numeric": [0.0, 2e-3, 5e-3, 2e-2, 1e-1], "unit": "s", "straggler_delay": True})
        self.assertEqual(few.columns(4), 4)
        self.assertEqual(few.scale, "symlog")
        self.assertNotIn("evenly", few.title)

    def test_overlap_is_judged_on_the_axis_as_drawn(self):
        # On a log axis over 0.5..30, lines 1.4% apart hide one another: named.
        notes = plot.coinciding({"a": [1.0, 10.0], "b": [1.014, 10.1], "c": [2.0, 20.0]}, "log", 0.5, 30.0)
        self.assertEqual(notes, ["a and b overlap: at most 1.4% apart at every point."])
        # On a linear axis over 0.9..1.05, 1% apart is 7% of the height: both lines show.
        self.assertEqual(plot.coinciding({"a": [0.95, 1.0], "b": [0.96, 1.01]}, "linear", 0.9, 1.05), [])

    def test_titles_in_words(self):
        self.assertEqual(plot.axis_words("delay"), "straggler delay [delay]")
        self.assertEqual(plot.value_words("topology.ecmp", "true"), "ECMP on")
        self.assertEqual(plot.value_words("ranks", "8"), "8 GPUs")
        self.assertEqual(plot.value_words("size", "64MiB"), "64MiB")


if __name__ == "__main__":
    unittest.main()
