"""Pictures the lessons draw with matplotlib (the ``notebook`` extra), the same on every
run for the same data: no dates, no random colours, a fixed size."""

from __future__ import annotations


def file_timeline(steps, *, title: str = "commitlog/ as the store rolls, then clean-up"):
    """The life of each file of a mapped-file queue (Java ``MappedFileQueue``) over a
    series of steps: a row per file, grey while it exists (pre-allocated by
    ``AllocateMappedFileService``, then full), blue while appends go into it, a red ×
    where it disappears (clean-up deleted it).

    ``steps``: ``(label, names present, the name being written or None)`` in order;
    returns the matplotlib ``Figure``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    steps = list(steps)
    names = sorted({n for _, present, _ in steps for n in present})
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.4))
    for row, name in enumerate(names):
        here = [name in present for _, present, _ in steps]
        active = [written == name for _, _, written in steps]
        for flags, colour, height in ((here, "#bdbdbd", 0.6), (active, "#0072b2", 0.6)):
            runs, start = [], None
            for x, on in enumerate(flags + [False]):
                if on and start is None:
                    start = x
                elif not on and start is not None:
                    runs.append((start - 0.5, x - start))
                    start = None
            ax.broken_barh(runs, (row - height / 2, height), color=colour)
        gone = [x for x in range(1, len(steps)) if here[x - 1] and not here[x]]
        ax.plot(gone, [row] * len(gone), "x", color="#c62828", markersize=10, markeredgewidth=2)
    ax.set_yticks(range(len(names)), [n.lstrip("0") or "0" for n in names])
    ax.invert_yaxis()
    labels = [str(label) for label, _, _ in steps]
    ticks = [x for x, label in enumerate(labels) if not label.isdigit() or int(label) % 10 == 0]
    ax.set_xticks(ticks, [labels[x] for x in ticks])
    ax.set_xlim(-0.5, len(steps) - 0.5)
    ax.set_xlabel("put (then clean-up)")
    ax.set_ylabel("file (its first offset)")
    ax.set_title(title)
    ax.legend(handles=[Patch(color="#bdbdbd", label="exists"), Patch(color="#0072b2", label="written into"),
                       plt.Line2D([], [], marker="x", color="#c62828", linestyle="", label="deleted")],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    plt.close(fig)  # shown by the notebook as the cell's value, not twice
    return fig
