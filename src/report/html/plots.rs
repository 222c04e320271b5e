//! The report's plots, drawn with `plotters` into SVG text.
//!
//! `plotters` is used with its SVG backend only and no font feature: its
//! fallback font code estimates a text's box from its length and size
//! (about 0.45 em per character), which is all an SVG needs — the browser
//! lays out the `<text>` elements with its own fonts, so no system font
//! file is read and nothing is rasterized. Labels and legends therefore get
//! generous areas rather than exact ones.
//!
//! **Print first.** Every plot has a white background, axes described with
//! their units, and series told apart by dash pattern and marker shape as
//! well as by colour, named in a legend: run A solid with circles, run B
//! dashed with triangles, a third series dotted with squares; the threshold
//! (dash-dot) and the round-trip budget (dash-dot-dot) are labelled lines.
//!
//! **Reference lines on every view.** A threshold or budget ([`RefLine`])
//! is drawn by the one function [`ref_line`] on each plot of its metric: a
//! vertical line at its value on the histogram and the box chart, a
//! horizontal one on the percentile curve and the timeline, each named
//! with its value in the legend, the axis widened to show it — [Red Hat controls]
//! Figure 4 reads "no sample beyond 6.7 ms" off the plot itself.
//!
//! **Readable when a distribution spans decades.** A histogram wider than
//! [`MAX_DRAWN_BINS`] 1 µs bins is drawn in merged bins
//! ([`jitterlab_core::plot::merge_bins`]: 2, 5, 10, 20 … µs, the axis says
//! which), its counts always on a log axis; the box chart and the chase's
//! jitter per sample ([`per_sample`], [Red Hat caterpillar] Figures 1–4) switch to a log
//! value axis ticked at whole decades when their figures span more than
//! [`jitterlab_core::plot::LOG_SPAN`] times.
//! The colours are the Okabe–Ito palette, which stays distinct for colour-
//! blind readers and in grey.
//!
//! **Dashes as an attribute.** `plotters` draws a dashed line as one SVG
//! `<line>` per dash; the step line of a 1 µs histogram with thousands of
//! bins would then take megabytes. Dashed series are therefore drawn solid
//! in a colour reserved for their dash pattern, and [`finish`] gives every
//! stroke of that colour the SVG `stroke-dasharray` attribute: one attribute
//! per line, and the legend's sample line gets the same dashes. Markers are
//! filled shapes (no stroke), so they stay whole.
//!
//! **What a plot holds besides pixels.** [`finish`] strips the SVG
//! namespace URL (an inline `<svg>` in HTML needs none, and the report holds
//! no URL of any kind), names the plot in a `<title>` (what a screen reader
//! says), and keeps the figures it was drawn from in `<metadata>` as plain
//! lines (`bin_us count`, `label value_ns`, …), so that a reader — and the
//! tests — can check each drawn figure against the database.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::fmt::Write as _;

use anyhow::{anyhow, Result};
use jitterlab_core::plot::{log_decades, merge_bins, nines_label, EnvelopePoint, Percentile};
use jitterlab_core::probe::MetricUnit;
use jitterlab_core::recorder::LatencyHistogram;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::output::shown;
use crate::render::safe::escape;

pub(super) mod monitor;

/// [`shown`] line by line: the line breaks of a plot's data stay.
fn shown_lines(data: &str) -> String {
    data.split_inclusive('\n')
        .map(|l| match l.strip_suffix('\n') {
            Some(l) => format!("{}\n", shown(l)),
            None => shown(l).into_owned(),
        })
        .collect()
}

/// Width of every plot, px.
pub(super) const WIDTH: u32 = 760;
/// Height of the histogram, percentile and timeline plots, px.
pub(super) const HEIGHT: u32 = 330;
/// The font family of every label (the reader's own sans-serif).
const FONT: &str = "sans-serif";
/// Where a zero count sits on a log count axis: below 1, at the bottom.
const FLOOR: f64 = 0.5;

/// A marker shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    /// A filled circle.
    Circle,
    /// A filled triangle.
    Triangle,
    /// A filled square.
    Square,
}

/// How one series looks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Look {
    /// Its colour (reserved for its dash pattern when it has one).
    pub colour: RGBColor,
    /// SVG `stroke-dasharray`; `None`: solid.
    pub dash: Option<&'static str>,
    /// Its markers.
    pub marker: Marker,
}

/// Run A, the first series: blue, solid, circles.
pub(super) const SOLID: Look = Look {
    colour: RGBColor(0x00, 0x72, 0xB2),
    dash: None,
    marker: Marker::Circle,
};
/// Run B, the second series: vermilion, dashed, triangles.
pub(super) const DASHED: Look = Look {
    colour: RGBColor(0xD5, 0x5E, 0x00),
    dash: Some("7 4"),
    marker: Marker::Triangle,
};
/// The third series: green, dotted, squares.
pub(super) const DOTTED: Look = Look {
    colour: RGBColor(0x00, 0x9E, 0x73),
    dash: Some("2 3"),
    marker: Marker::Square,
};
/// The threshold line: reddish purple, dash-dot.
pub(super) const THRESHOLD: Look = Look {
    colour: RGBColor(0xCC, 0x79, 0xA7),
    dash: Some("10 3 2 3"),
    marker: Marker::Circle,
};
/// The budget line: black, dash-dot-dot.
pub(super) const BUDGET: Look = Look {
    colour: RGBColor(0x11, 0x11, 0x11),
    dash: Some("10 3 2 3 2 3"),
    marker: Marker::Circle,
};
/// Every look with a dash pattern, for [`finish`].
const DASHED_LOOKS: [Look; 4] = [DASHED, DOTTED, THRESHOLD, BUDGET];

/// The unit a metric is plotted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Axis {
    /// Nanoseconds plotted as microseconds.
    Us,
    /// CPU cycles.
    Cycles,
}

impl Axis {
    /// The axis of a metric's unit.
    pub fn of(unit: MetricUnit) -> Axis {
        match unit {
            MetricUnit::Ns => Axis::Us,
            MetricUnit::Cycles => Axis::Cycles,
        }
    }

    /// A stored value on this axis.
    pub fn value(self, v: i64) -> f64 {
        match self {
            Axis::Us => v as f64 / 1_000.0,
            Axis::Cycles => v as f64,
        }
    }

    /// The unit's name on the axis.
    pub fn unit(self) -> &'static str {
        match self {
            Axis::Us => "µs",
            Axis::Cycles => "cycles",
        }
    }
}

/// A tick label: no more decimals than the value needs.
pub(super) fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A count label on a log axis: whole counts only (the floor below 1 is
/// where zero counts sit and has no label).
fn count_label(v: f64) -> String {
    if v < 1.0 || (v - v.round()).abs() > 1e-6 {
        String::new()
    } else {
        format!("{v:.0}")
    }
}

fn drawing<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a plot: {e:?}")
}

/// Draws `points` as one line of `look`.
fn line<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    look: Look,
    points: Vec<(f64, f64)>,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = look.colour.stroke_width(2);
    chart
        .draw_series(LineSeries::new(points, style))
        .map_err(drawing)?;
    Ok(())
}

/// Draws a marker of `look` at every point (no legend entry of its own).
fn markers<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    look: Look,
    points: &[(f64, f64)],
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let fill = look.colour.filled();
    let r = match look.marker {
        Marker::Circle => chart.draw_series(
            points
                .iter()
                .map(|&p| EmptyElement::at(p) + Circle::new((0, 0), 4, fill)),
        ),
        Marker::Triangle => chart.draw_series(
            points
                .iter()
                .map(|&p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 6, fill)),
        ),
        Marker::Square => chart.draw_series(
            points
                .iter()
                .map(|&p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], fill)),
        ),
    };
    r.map_err(drawing)?;
    Ok(())
}

/// What a legend entry shows beside its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sample {
    /// A line in the look's pattern.
    Line,
    /// A line with the look's marker on it.
    Marked,
    /// A box outline (box charts).
    Box,
    /// A shaded band (a span of time, e.g. the windows RT throttling hit).
    Band,
}

/// One legend entry.
struct Entry {
    name: String,
    look: Look,
    sample: Sample,
}

/// The estimated width of a legend entry, px (sample, gap, text at about
/// 7 px a character).
fn entry_width(e: &Entry) -> i32 {
    34 + 7 * e.name.chars().count() as i32 + 18
}

/// The legend's rows: entries left to right, wrapped at the plot's width.
fn legend_rows(entries: &[Entry]) -> Vec<Vec<&Entry>> {
    let mut rows: Vec<Vec<&Entry>> = vec![Vec::new()];
    let mut x = 0;
    for e in entries {
        let w = entry_width(e);
        if x + w > WIDTH as i32 - 90 && !rows.last().is_none_or(Vec::is_empty) {
            rows.push(Vec::new());
            x = 0;
        }
        rows.last_mut().expect("one row").push(e);
        x += w;
    }
    rows
}

/// The space above the plot that the legend takes, px.
fn legend_height(entries: &[Entry]) -> u32 {
    10 + 20 * legend_rows(entries).len() as u32
}

/// Draws the legend above the plot area, where it hides no data: per
/// entry its sample (line pattern, marker, box) and its name.
fn legend(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[Entry],
) -> Result<()> {
    let text = (FONT, 14)
        .into_text_style(root)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in legend_rows(entries).into_iter().enumerate() {
        let y = 16 + 20 * r as i32;
        let mut x = 80;
        for e in row {
            let style = e.look.colour.stroke_width(2);
            match e.sample {
                Sample::Band => root.draw(&Rectangle::new(
                    [(x, y - 6), (x + 26, y + 6)],
                    e.look.colour.mix(BAND_ALPHA).filled(),
                )),
                Sample::Box => root.draw(&PathElement::new(
                    vec![
                        (x, y - 5),
                        (x + 24, y - 5),
                        (x + 24, y + 5),
                        (x, y + 5),
                        (x, y - 5),
                    ],
                    style,
                )),
                _ => root.draw(&PathElement::new(vec![(x, y), (x + 26, y)], style)),
            }
            .map_err(drawing)?;
            if e.sample == Sample::Marked {
                let fill = e.look.colour.filled();
                let c = (x + 13, y);
                match e.look.marker {
                    Marker::Circle => root.draw(&Circle::new(c, 4, fill)),
                    Marker::Triangle => root.draw(&TriangleMarker::new(c, 6, fill)),
                    Marker::Square => {
                        root.draw(&Rectangle::new([(c.0 - 4, y - 4), (c.0 + 4, y + 4)], fill))
                    }
                }
                .map_err(drawing)?;
            }
            root.draw(&Text::new(e.name.clone(), (x + 32, y), text.clone()))
                .map_err(drawing)?;
            x += entry_width(e);
        }
    }
    Ok(())
}

/// A chart drawn into SVG with the given coordinates.
type Chart<'a, X, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>;

/// A chart of `width` × `height` with the given ranges and axis texts.
fn chart<'a, X, Y>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    x: X,
    y: Y,
    left: u32,
    top: u32,
) -> Result<Chart<'a, X::CoordDescType, Y::CoordDescType>>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
{
    root.fill(&WHITE).map_err(drawing)?;
    ChartBuilder::on(root)
        .margin(14)
        .margin_top(top)
        .x_label_area_size(48)
        .y_label_area_size(left)
        .build_cartesian_2d(x, y)
        .map_err(drawing)
}

/// Turns `plotters`' SVG into the page's: see the module doc.
pub(super) fn finish(kind: &str, title: &str, data: &str, svg: &str) -> String {
    let mut s = svg.replacen(
        " xmlns=\"http://www.w3.org/2000/svg\"",
        &format!(" class=\"plot\" data-plot=\"{kind}\" role=\"img\""),
        1,
    );
    for look in DASHED_LOOKS {
        let RGBColor(r, g, b) = look.colour;
        let stroke = format!("stroke=\"#{r:02X}{g:02X}{b:02X}\"");
        if let Some(d) = look.dash {
            s = s.replace(&stroke, &format!("{stroke} stroke-dasharray=\"{d}\""));
        }
    }
    let head = s.find(">\n").map_or(s.len(), |i| i + 2);
    let inner = format!(
        "<title>{}</title>\n<metadata>{}</metadata>\n",
        escape(&shown(title)),
        escape(&shown_lines(data))
    );
    s.insert_str(head, &inner);
    s
}

/// One series of a histogram.
pub(super) struct HistSeries<'a> {
    /// Its name in the legend.
    pub name: String,
    /// Its counts.
    pub hist: &'a LatencyHistogram,
    /// How it looks.
    pub look: Look,
}

/// The last bin with a count, plus one (at least 1).
fn used_bins(h: &LatencyHistogram) -> usize {
    h.buckets.iter().rposition(|&c| c > 0).map_or(1, |i| i + 1)
}

/// The outline of `counts[0 .. end]` as steps, bin `i` spanning
/// `i·width .. (i+1)·width` on the x axis: two points per run of equal
/// counts, a zero count at [`FLOOR`].
fn steps(counts: &[u64], end: usize, width: f64) -> Vec<(f64, f64)> {
    let at = |i: usize| counts.get(i).copied().unwrap_or(0);
    let y = |c: u64| if c == 0 { FLOOR } else { c as f64 };
    let mut v = Vec::new();
    let mut i = 0;
    while i < end {
        let c = at(i);
        let mut j = i + 1;
        while j < end && at(j) == c {
            j += 1;
        }
        v.push((i as f64 * width, y(c)));
        v.push((j as f64 * width, y(c)));
        i = j;
    }
    v
}

/// The most bins a histogram draws: wider ones are merged for display.
pub(super) const MAX_DRAWN_BINS: usize = 400;

/// A labelled reference line (see the module doc) drawn on `chart`:
/// vertical at `at` when `vertical`, else horizontal, from `from` to `to`
/// on the other axis.
fn ref_line<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    l: &RefLine,
    at: f64,
    vertical: bool,
    (from, to): (f64, f64),
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let pts = if vertical {
        vec![(at, from), (at, to)]
    } else {
        vec![(from, at), (to, at)]
    };
    line(chart, l.look, pts)
}

/// The legend entries of reference lines.
fn ref_entries(lines: &[RefLine]) -> impl Iterator<Item = Entry> + '_ {
    lines.iter().map(|l| Entry {
        name: l.name.clone(),
        look: l.look,
        sample: Sample::Line,
    })
}

/// The metadata lines of reference lines.
fn ref_data(data: &mut String, lines: &[RefLine]) {
    for l in lines {
        let _ = writeln!(data, "line {} {}", l.name, l.value);
    }
}

/// The latency histogram: 1 µs bins (merged for display beyond
/// [`MAX_DRAWN_BINS`]) on a linear axis, the count on a log axis, one step
/// line per series, and `lines` (ns) as vertical reference lines.
pub(super) fn histogram(
    metric: &str,
    series: &[HistSeries<'_>],
    lines: &[RefLine],
    title: &str,
) -> Result<String> {
    let used = series.iter().map(|s| used_bins(s.hist)).max().unwrap_or(1);
    // A line beyond the last sample widens the axis to show it.
    let line_end = lines
        .iter()
        .map(|l| usize::try_from(l.value.max(0) / 1_000).unwrap_or(usize::MAX / 2) + 1)
        .map(|b| b + b / 20)
        .max()
        .unwrap_or(0);
    let span = used.max(line_end);
    let merged: Vec<_> = series
        .iter()
        .map(|s| merge_bins(&s.hist.buckets, span, MAX_DRAWN_BINS))
        .collect();
    let width = merged.first().map_or(1, |m| m.width);
    let drawn = span.div_ceil(usize::try_from(width).unwrap_or(1));
    let end = drawn as f64 * width as f64;
    let top = merged
        .iter()
        .flat_map(|m| m.counts.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut data = String::new();
    for (s, m) in series.iter().zip(&merged) {
        let _ = writeln!(data, "# {}\nbin_us count", s.name);
        for (i, c) in s.hist.buckets.iter().enumerate().filter(|(_, c)| **c > 0) {
            let _ = writeln!(data, "{i} {c}");
        }
        let _ = writeln!(data, "overflows {}", s.hist.overflows);
        if width > 1 {
            let _ = writeln!(data, "drawn in {width} µs bins\nfrom_us count");
            for (i, c) in m.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let _ = writeln!(data, "{} {c}", i as u64 * width);
            }
        }
    }
    ref_data(&mut data, lines);
    let entries: Vec<Entry> = series
        .iter()
        .map(|s| Entry {
            name: s.name.clone(),
            look: s.look,
            sample: Sample::Line,
        })
        .chain(ref_entries(lines))
        .collect();
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + lh)).into_drawing_area();
        let ceiling = top as f64 * 3.0;
        let mut c = chart(&root, 0f64..end, (FLOOR..ceiling).log_scale(), 72, lh)?;
        let bins = if width == 1 {
            "1 µs bins".to_string()
        } else {
            format!("{width} µs bins (1 µs bins merged for display)")
        };
        c.configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_desc(format!("{metric} (µs), {bins}"))
            .y_desc("samples per bin (log scale)")
            .x_label_formatter(&|v| num(*v))
            .y_label_formatter(&|v| count_label(*v))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        for (s, m) in series.iter().zip(&merged) {
            line(&mut c, s.look, steps(&m.counts, drawn, width as f64))?;
        }
        for l in lines {
            ref_line(&mut c, l, l.value as f64 / 1_000.0, true, (FLOOR, ceiling))?;
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    Ok(finish("histogram", title, &data, &svg))
}

/// One series of a percentile curve.
pub(super) struct CurveSeries {
    /// Its name in the legend.
    pub name: String,
    /// Its points, in the metric's unit.
    pub points: Vec<Percentile>,
    /// How it looks.
    pub look: Look,
}

/// A labelled horizontal line: a threshold or a budget.
pub(super) struct RefLine {
    /// Its name in the legend (with its value).
    pub name: String,
    /// Its value, in the metric's unit.
    pub value: i64,
    /// How it looks.
    pub look: Look,
}

/// The percentile curve: the metric against percentile on the nines axis
/// (`x = −log10(1 − q)`: p90 at 1, p99 at 2 …), with labelled threshold and
/// budget lines.
pub(super) fn percentiles(
    metric: &str,
    axis: Axis,
    series: &[CurveSeries],
    lines: &[RefLine],
    title: &str,
) -> Result<String> {
    let right = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.nines))
        .fold(1.0f64, f64::max)
        + 0.25;
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.value))
        .chain(lines.iter().map(|l| l.value))
        .map(|v| axis.value(v));
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let hi = if hi <= lo { lo + 1.0 } else { hi };
    let pad = (hi - lo) * 0.08;
    let mut data = String::new();
    for s in series {
        let _ = writeln!(data, "# {}\nlabel nines value", s.name);
        for p in &s.points {
            let _ = writeln!(data, "{} {:.4} {}", p.label, p.nines, p.value);
        }
    }
    ref_data(&mut data, lines);
    let entries: Vec<Entry> = series
        .iter()
        .map(|s| Entry {
            name: s.name.clone(),
            look: s.look,
            sample: Sample::Marked,
        })
        .chain(ref_entries(lines))
        .collect();
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + lh)).into_drawing_area();
        let y0 = if lo < 0.0 { lo - pad } else { 0.0 };
        let mut c = chart(&root, 0f64..right, y0..hi + pad, 72, lh)?;
        c.configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_labels(12)
            .x_desc("percentile (log tail: each step one more nine)")
            .y_desc(format!("{metric} ({})", axis.unit()))
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() > 1e-6 {
                    String::new()
                } else if v.round() == 0.0 {
                    "min".into()
                } else {
                    nines_label(v.round())
                }
            })
            .y_label_formatter(&|v| num(*v))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        for l in lines {
            ref_line(&mut c, l, axis.value(l.value), false, (0.0, right))?;
        }
        for s in series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (p.nines, axis.value(p.value)))
                .collect();
            line(&mut c, s.look, pts.clone())?;
            markers(&mut c, s.look, &pts)?;
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    Ok(finish("percentiles", title, &data, &svg))
}

/// The time unit of a timeline `total_ns` long: seconds up to 10 minutes,
/// minutes up to 6 hours, hours beyond.
pub(super) fn time_unit(total_ns: u64) -> (&'static str, f64) {
    if total_ns <= 600_000_000_000 {
        ("s", 1e9)
    } else if total_ns <= 6 * 3_600_000_000_000 {
        ("min", 60e9)
    } else {
        ("h", 3_600e9)
    }
}

/// The look of the bands that mark the windows RT throttling hit: grey,
/// translucent, so the series drawn over them stay readable.
const THROTTLED: Look = Look {
    colour: RGBColor(0x80, 0x80, 0x80),
    dash: None,
    marker: Marker::Square,
};

/// The opacity of a band.
const BAND_ALPHA: f64 = 0.25;

/// The legend name of the bands of the windows RT throttling hit.
pub(super) const THROTTLED_NAME: &str = "RT throttling";

/// The timeline: per point of the envelope, the maximum of the windows'
/// maxima (solid), their count-weighted mean (dashed) and the minimum of
/// their minima (dotted), against the time since the first release, with
/// `lines` as horizontal reference lines and `throttled` (start, end ns
/// since the first release) as shaded bands under them, named "RT
/// throttling" in the legend.
#[allow(clippy::too_many_arguments)]
pub(super) fn timeline(
    metric: &str,
    axis: Axis,
    points: &[EnvelopePoint],
    window_ns: u64,
    per_point: u64,
    lines: &[RefLine],
    throttled: &[(u64, u64)],
    title: &str,
) -> Result<String> {
    let window_ns = window_ns.max(1);
    let total = points
        .iter()
        .map(|p| (p.last_window + 1) * window_ns)
        .max()
        .unwrap_or(window_ns);
    let (unit, scale) = time_unit(total);
    let mid = |p: &EnvelopePoint| {
        let end = (p.first_window + per_point).min(p.last_window + 1);
        (p.first_window + end) as f64 * window_ns as f64 / 2.0 / scale
    };
    let shown: Vec<&EnvelopePoint> = points.iter().filter(|p| p.max.is_some()).collect();
    let series = |f: fn(&EnvelopePoint) -> Option<i64>| -> Vec<(f64, f64)> {
        shown
            .iter()
            .filter_map(|p| f(p).map(|v| (mid(p), axis.value(v))))
            .collect()
    };
    let max = series(|p| p.max);
    let mean = series(|p| p.mean);
    let min = series(|p| p.min);
    let (lo, hi) = min
        .iter()
        .chain(&max)
        .map(|p| p.1)
        .chain(lines.iter().map(|l| axis.value(l.value)))
        .fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let hi = if hi <= lo { lo + 1.0 } else { hi };
    let pad = (hi - lo) * 0.08;
    let mut data =
        format!("windows_per_point {per_point}\nfirst_window last_window count min max mean\n");
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    for p in points {
        let _ = writeln!(
            data,
            "{} {} {} {} {} {}",
            p.first_window,
            p.last_window,
            p.count,
            opt(p.min),
            opt(p.max),
            opt(p.mean)
        );
    }
    ref_data(&mut data, lines);
    for (a, b) in throttled {
        let _ = writeln!(data, "band {THROTTLED_NAME} {a} {b}");
    }
    let few = shown.len() <= 60;
    let named = [
        (SOLID, max, "max of the windows' maxima"),
        (DASHED, mean, "mean of the windows (by count)"),
        (DOTTED, min, "min of the windows' minima"),
    ];
    let entries: Vec<Entry> = named
        .iter()
        .map(|(look, _, name)| Entry {
            name: name.to_string(),
            look: *look,
            sample: if few { Sample::Marked } else { Sample::Line },
        })
        .chain(ref_entries(lines))
        .chain((!throttled.is_empty()).then(|| Entry {
            name: THROTTLED_NAME.into(),
            look: THROTTLED,
            sample: Sample::Band,
        }))
        .collect();
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + lh)).into_drawing_area();
        let y0 = if lo < 0.0 { lo - pad } else { 0.0 };
        let mut c = chart(&root, 0f64..total as f64 / scale, y0..hi + pad, 72, lh)?;
        // The bands first: every series is drawn over them.
        for (a, b) in throttled {
            let x = |ns: u64| ns.min(total) as f64 / scale;
            c.draw_series(std::iter::once(Rectangle::new(
                [(x(*a), y0), (x(*b), hi + pad)],
                THROTTLED.colour.mix(BAND_ALPHA).filled(),
            )))
            .map_err(drawing)?;
        }
        c.configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_desc(format!("time since the first release ({unit})"))
            .y_desc(format!("{metric} ({})", axis.unit()))
            .x_label_formatter(&|v| num(*v))
            .y_label_formatter(&|v| num(*v))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        for l in lines {
            ref_line(
                &mut c,
                l,
                axis.value(l.value),
                false,
                (0.0, total as f64 / scale),
            )?;
        }
        for (look, pts, _) in named {
            line(&mut c, look, pts.clone())?;
            if few {
                markers(&mut c, look, &pts)?;
            }
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    Ok(finish("timeline", title, &data, &svg))
}

/// One box of a box chart: a metric's spread in one cell of one run.
#[derive(Debug, Clone, Copy)]
pub(super) struct BoxEntry {
    /// Minimum.
    pub min: i64,
    /// Median; `None` for partial figures (no percentiles).
    pub p50: Option<i64>,
    /// 99th percentile; `None` for partial figures.
    pub p99: Option<i64>,
    /// Maximum.
    pub max: i64,
}

/// One row of a box chart: a group (configuration × scenario …) with one
/// box per series (run), `None` where that run has no such cell.
pub(super) struct BoxRow {
    /// The group's name.
    pub label: String,
    /// One entry per series.
    pub entries: Vec<Option<BoxEntry>>,
}

/// The longest group name printed whole.
const LABEL_CHARS: usize = 44;

/// A group name that fits the label area: long ones keep their end.
fn short(label: &str) -> String {
    let n = label.chars().count();
    if n <= LABEL_CHARS {
        label.to_string()
    } else {
        let tail: String = label.chars().skip(n - (LABEL_CHARS - 1)).collect();
        format!("…{tail}")
    }
}

/// A box chart, one row per group: the whisker from min to max with caps,
/// the box from p50 to p99 (filled for the first series, dashed outline for
/// the second), each series' look named in the legend, `lines` as vertical
/// reference lines. Positive figures that span more than 30× are drawn on
/// a log axis (and the axis says so).
pub(super) fn boxes(
    metric: &str,
    axis: Axis,
    rows: &[BoxRow],
    series: &[(String, Look)],
    lines: &[RefLine],
    title: &str,
) -> Result<String> {
    let m = series.len().max(1);
    let n = rows.len().max(1);
    let height = (90 + n * (14 + 18 * m)).max(200) as u32;
    let entries = rows.iter().flat_map(|r| r.entries.iter().flatten());
    let (lo, hi) = entries
        .flat_map(|e| [e.min, e.max])
        .chain(lines.iter().map(|l| l.value))
        .map(|v| axis.value(v))
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if lo > hi { (0.0, 1.0) } else { (lo, hi) };
    let hi = if hi <= lo { lo + 1.0 } else { hi };
    // Positive figures spanning more than a decade and a half (a tuned
    // cell's 30 µs beside a baseline's 90 ms) are drawn on a log axis,
    // else the tuned cell would be a line at zero: x = log10(value).
    let decades = log_decades(lo, hi);
    let log = decades.is_some();
    let at = move |v: i64| {
        let x = axis.value(v);
        if log {
            x.log10()
        } else {
            x
        }
    };
    let (x0, x1) = if let Some((a, b)) = decades {
        (f64::from(a), f64::from(b))
    } else {
        let pad = (hi - lo) * 0.06;
        (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
    };
    let left = rows
        .iter()
        .map(|r| short(&r.label).chars().count())
        .max()
        .unwrap_or(4) as u32
        * 7
        + 16;
    let mut data = String::from("group series min p50 p99 max\n");
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    for r in rows {
        for (k, e) in r.entries.iter().enumerate() {
            if let Some(e) = e {
                let _ = writeln!(
                    data,
                    "{} | {} | {} {} {} {}",
                    r.label,
                    series.get(k).map_or("", |s| s.0.as_str()),
                    e.min,
                    opt(e.p50),
                    opt(e.p99),
                    e.max
                );
            }
        }
    }
    ref_data(&mut data, lines);
    // The half height of a box, and the offset of series k from its row.
    let half = 0.32 / m as f64;
    let offset = |k: usize| ((m - 1) as f64 / 2.0 - k as f64) * 2.4 * half;
    let entries: Vec<Entry> = series
        .iter()
        .map(|(name, look)| Entry {
            name: name.clone(),
            look: *look,
            sample: Sample::Box,
        })
        .chain(ref_entries(lines))
        .collect();
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height + lh)).into_drawing_area();
        let mut c: Chart<'_, RangedCoordf64, RangedCoordf64> =
            chart(&root, x0..x1, -0.6f64..n as f64 - 0.4, left, lh)?;
        let tick = |v: &f64| value_tick(*v, log);
        c.configure_mesh()
            .max_light_lines(0)
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(if log { (x1 - x0) as usize * 2 + 1 } else { 10 })
            .bold_line_style(BLACK.mix(0.12))
            .x_desc(if log {
                format!("{metric} ({}, log scale)", axis.unit())
            } else {
                format!("{metric} ({})", axis.unit())
            })
            .x_label_formatter(&tick)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        for (k, (_, look)) in series.iter().enumerate() {
            let style = look.colour.stroke_width(2);
            let fill = look.colour.mix(0.3).filled();
            let mut shapes: Vec<PathElement<(f64, f64)>> = Vec::new();
            let mut filled: Vec<Rectangle<(f64, f64)>> = Vec::new();
            for (i, r) in rows.iter().enumerate() {
                let Some(Some(e)) = r.entries.get(k) else {
                    continue;
                };
                let y = (n - 1 - i) as f64 + offset(k);
                let (min, max) = (at(e.min), at(e.max));
                shapes.push(PathElement::new(vec![(min, y), (max, y)], style));
                for x in [min, max] {
                    shapes.push(PathElement::new(vec![(x, y - half), (x, y + half)], style));
                }
                if let (Some(p50), Some(p99)) = (e.p50, e.p99) {
                    let (a, b) = (at(p50), at(p99));
                    if k == 0 {
                        filled.push(Rectangle::new([(a, y - half), (b, y + half)], fill));
                    }
                    shapes.push(PathElement::new(
                        vec![
                            (a, y - half),
                            (b, y - half),
                            (b, y + half),
                            (a, y + half),
                            (a, y - half),
                        ],
                        style,
                    ));
                    // The median, thicker.
                    shapes.push(PathElement::new(
                        vec![(a, y - half * 1.3), (a, y + half * 1.3)],
                        look.colour.stroke_width(4),
                    ));
                }
            }
            c.draw_series(filled).map_err(drawing)?;
            c.draw_series(shapes).map_err(drawing)?;
        }
        for l in lines {
            ref_line(&mut c, l, at(l.value), true, (-0.6, n as f64 - 0.4))?;
        }
        let label = (FONT, 13)
            .into_text_style(&root)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, r) in rows.iter().enumerate() {
            let (px, py) = c.backend_coord(&(x0, (n - 1 - i) as f64));
            root.draw(&Text::new(short(&r.label), (px - 8, py), label.clone()))
                .map_err(drawing)?;
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    Ok(finish("boxes", title, &data, &svg))
}

/// One series of the jitter per sample: `(sample number, value)`.
pub(super) struct SampleSeries {
    /// Its name in the legend.
    pub name: String,
    /// Its points, in CPU cycles.
    pub points: Vec<(u64, u64)>,
    /// How it looks.
    pub look: Look,
}

/// A value axis tick: on a log axis (`log`: the axis is `log10(value)`),
/// only whole decades are labelled: with their value up to 100 000, as a
/// power of ten above (`10⁶`), which stays short enough for the axis.
fn value_tick(v: f64, log: bool) -> String {
    const SUPERSCRIPT: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    if !log {
        num(v)
    } else if (v - v.round()).abs() < 1e-6 {
        let k = v.round() as i32;
        if k >= 6 {
            let exp: String = k
                .to_string()
                .chars()
                .filter_map(|d| d.to_digit(10).map(|d| SUPERSCRIPT[d as usize]))
                .collect();
            format!("10{exp}")
        } else {
            num(10f64.powf(f64::from(k)))
        }
    } else {
        String::new()
    }
}

/// The chase's jitter per sample ([Red Hat caterpillar] Figures 1–4): `what` (CPU
/// cycles) against the sample number, one line per series; on a log axis
/// ticked at whole decades when the values span more than
/// [`jitterlab_core::plot::LOG_SPAN`] times (a zero sits on the bottom edge).
pub(super) fn per_sample(what: &str, series: &[SampleSeries], title: &str) -> Result<String> {
    let values = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let lo = values().filter(|&v| v > 0).min().unwrap_or(1) as f64;
    let hi = values().max().unwrap_or(1).max(1) as f64;
    let decades = log_decades(lo, hi);
    let (y0, y1) = match decades {
        Some((a, b)) => (f64::from(a), f64::from(b)),
        None => (0.0, hi * 1.08),
    };
    let y = |v: u64| match decades {
        Some((a, _)) if v == 0 => f64::from(a),
        Some(_) => (v as f64).log10(),
        None => v as f64,
    };
    let last = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .max()
        .unwrap_or(1)
        .max(1);
    let mut data = String::new();
    for s in series {
        let _ = writeln!(data, "# {}\nsample cycles", s.name);
        for (n, v) in &s.points {
            let _ = writeln!(data, "{n} {v}");
        }
    }
    let few = series.iter().all(|s| s.points.len() <= 60);
    let entries: Vec<Entry> = series
        .iter()
        .map(|s| Entry {
            name: s.name.clone(),
            look: s.look,
            sample: if few { Sample::Marked } else { Sample::Line },
        })
        .collect();
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + lh)).into_drawing_area();
        let mut c = chart(&root, 0.5f64..last as f64 + 0.5, y0..y1, 84, lh)?;
        let log = decades.is_some();
        let tick = |v: &f64| value_tick(*v, log);
        c.configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .y_labels(if log { (y1 - y0) as usize * 2 + 1 } else { 10 })
            .x_desc("sample")
            .y_desc(if log {
                format!("{what} (CPU cycles, log scale)")
            } else {
                format!("{what} (CPU cycles)")
            })
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() > 1e-6 {
                    String::new()
                } else {
                    num(*v)
                }
            })
            .y_label_formatter(&tick)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        for s in series {
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&(n, v)| (n as f64, y(v))).collect();
            line(&mut c, s.look, pts.clone())?;
            if few {
                markers(&mut c, s.look, &pts)?;
            }
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    Ok(finish("per-sample", title, &data, &svg))
}
