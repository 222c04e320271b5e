//! The 5-minute-maxima plot of a monitor series, as OSADL's latency farm
//! draws it: the largest latency of every 5 minutes against the time of
//! day and date, on a log axis (a 10 µs day and a 300 µs spike on one
//! plot), one series per CPU.
//!
//! Drawn with the helpers of [`super`] (its legend, chart and line
//! drawing, and [`super::finish`]), so it looks like the report's other
//! plots: per CPU a look of its own (the colours, dash patterns and legend
//! of the run plots for the first three CPUs, then two more colours of the
//! same palette, then again from the first), every resumption of the
//! monitor a dashed grey vertical line, every mark of its task (a restart
//! it was re-attached after) a dotted dark red one, the worst ever a
//! black dot with its value, time and CPU written beside it. When the 5-minute rows no longer
//! reach back to the start of the series (they are kept for a year by
//! default), the hourly maxima before them continue each CPU's line, left
//! of a grey line that says where the resolution changes.
//!
//! The figures drawn are in the plot's `<metadata>`: per series its rows
//! and points (`start_s max_ns`), the resumptions, the marks and the worst
//! ever.

use super::*;
use crate::store::monitor::view::{MaximaSeries, MonitorView};
use jitterlab_core::units::format_utc as utc;

/// The fourth CPU: orange, solid.
const ORANGE: Look = Look {
    colour: RGBColor(0xE6, 0x9F, 0x00),
    dash: None,
    marker: Marker::Circle,
};
/// The fifth CPU: sky blue, solid.
const SKY: Look = Look {
    colour: RGBColor(0x56, 0xB4, 0xE9),
    dash: None,
    marker: Marker::Circle,
};
/// The looks of the CPUs, in CPU order, again from the first after the
/// last.
const CPU_LOOKS: [Look; 5] = [SOLID, DASHED, DOTTED, ORANGE, SKY];
/// A resumption: grey, dashed.
const RESUMED: Look = Look {
    colour: RGBColor(0x66, 0x66, 0x66),
    dash: Some("5 4"),
    marker: Marker::Circle,
};
/// A mark of the task (a restart the monitor re-attached after): dark
/// red, dotted (a colour no other look has: [`super::finish`] dashes
/// every stroke of a dashed look's colour).
const MARK: Look = Look {
    colour: RGBColor(0xA0, 0x20, 0x20),
    dash: Some("2 3"),
    marker: Marker::Circle,
};
/// Where the hourly rows end and the 5-minute rows begin: light grey.
const RESOLUTION: Look = Look {
    colour: RGBColor(0xAA, 0xAA, 0xAA),
    dash: None,
    marker: Marker::Circle,
};
/// The grid lines: as light as the other plots' mesh (black at 12 % on
/// white).
const GRID: Look = Look {
    colour: RGBColor(0xE1, 0xE1, 0xE1),
    dash: None,
    marker: Marker::Circle,
};
/// The worst ever: a black dot.
const WORST: Look = Look {
    colour: RGBColor(0x00, 0x00, 0x00),
    dash: None,
    marker: Marker::Circle,
};

/// The look of the `k`-th CPU.
fn cpu_look(k: usize) -> Look {
    CPU_LOOKS[k % CPU_LOOKS.len()]
}

/// How the time axis labels its ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ticks {
    /// Month, day and time of day: ticks less than a day apart.
    Time,
    /// The date: ticks whole days apart.
    Date,
    /// Year and month: ticks at the first of a month.
    Month,
}

/// Spans between ticks of less than a month, seconds.
const STEPS: [i64; 14] = [
    60,
    300,
    900,
    1_800,
    3_600,
    7_200,
    10_800,
    21_600,
    43_200,
    86_400,
    2 * 86_400,
    7 * 86_400,
    14 * 86_400,
    28 * 86_400,
];
/// The most ticks on the time axis.
const MAX_TICKS: i64 = 8;

/// The first of the month `months` months after January of year 0, as
/// Unix seconds.
fn month_start(months: i64) -> Option<i64> {
    let year = i32::try_from(months.div_euclid(12)).ok()?;
    let month = time::Month::try_from(months.rem_euclid(12) as u8 + 1).ok()?;
    let date = time::Date::from_calendar_date(year, month, 1).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp())
}

/// Ticks on whole UTC times between `x0` and `x1` (Unix s): at most
/// [`MAX_TICKS`], at the first step of [`STEPS`] that gives no more, else
/// at the first of every 1, 2, 3, 6 or 12 months.
fn time_ticks(x0: f64, x1: f64) -> (Vec<f64>, Ticks) {
    let (a, b) = (x0.ceil() as i64, x1.floor() as i64);
    if let Some(&step) = STEPS.iter().find(|&&s| (b - a) / s < MAX_TICKS) {
        let first = a.div_euclid(step) * step + if a.rem_euclid(step) > 0 { step } else { 0 };
        let ticks = (0..)
            .map(|k| first + k * step)
            .take_while(|&t| t <= b)
            .map(|t| t as f64)
            .collect();
        let kind = if step < 86_400 {
            Ticks::Time
        } else {
            Ticks::Date
        };
        return (ticks, kind);
    }
    let date = |s: i64| time::OffsetDateTime::from_unix_timestamp(s).ok();
    let Some((d0, d1)) = date(a).zip(date(b)) else {
        return (Vec::new(), Ticks::Month);
    };
    let months =
        |d: time::OffsetDateTime| i64::from(d.year()) * 12 + i64::from(u8::from(d.month())) - 1;
    let (m0, m1) = (months(d0), months(d1));
    let step = [1, 2, 3, 6, 12, 24, 60, 120]
        .into_iter()
        .find(|&m| (m1 - m0) / m < MAX_TICKS)
        .unwrap_or(120);
    let ticks = (m0.div_euclid(step)..=m1.div_euclid(step) + 1)
        .filter_map(|k| month_start(k * step))
        .filter(|&t| (a..=b).contains(&t))
        .map(|t| t as f64)
        .collect();
    (ticks, Ticks::Month)
}

/// A tick's label (UTC).
fn time_label(s: f64, kind: Ticks) -> String {
    let t = utc((s.round() as i64).saturating_mul(1_000_000_000), false);
    match kind {
        Ticks::Time => t[5..16].replacen('T', " ", 1),
        Ticks::Date => t[..10].to_string(),
        Ticks::Month => t[..7].to_string(),
    }
}

/// Ticks of the log latency axis from `lo` to `hi` µs: 1, 2 and 5 times
/// each power of ten between, or only the powers of ten when those are
/// more than [`MAX_TICKS`]; 1 to 9 times them when the range holds fewer
/// than two of 1, 2 and 5.
fn value_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let within = |steps: &[f64]| -> Vec<f64> {
        (a..=b)
            .flat_map(|k| steps.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let ticks = within(&[1.0, 2.0, 5.0]);
    if ticks.len() > MAX_TICKS as usize {
        return within(&[1.0]);
    }
    if ticks.len() < 2 {
        return within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    ticks
}

/// Draws a grid line through `points`: one pixel, as light as the mesh.
fn grid<X, Y>(chart: &mut Chart<'_, X, Y>, points: Vec<(f64, f64)>) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(points, GRID.colour.stroke_width(1)))
        .map_err(drawing)?;
    Ok(())
}

/// The points of `series` as (Unix s, µs).
fn xy(series: &MaximaSeries) -> Vec<(f64, f64)> {
    series
        .points
        .iter()
        .map(|p| (p.start_s as f64, Axis::Us.value(p.max_ns).max(0.001)))
        .collect()
}

/// The plot of `view`'s maxima; `None` when it has no row to draw.
pub(in crate::report::html) fn maxima(view: &MonitorView, title: &str) -> Result<Option<String>> {
    let plot = &view.plot;
    let all: Vec<&MaximaSeries> = plot.hourly.iter().chain(&plot.five_minute).collect();
    let points: Vec<(f64, f64)> = all.iter().flat_map(|s| xy(s)).collect();
    if points.is_empty() {
        return Ok(None);
    }
    // From the first row held (a point is the row of its group's maximum,
    // which may come later).
    let x0 = [plot.hourly_from_s, plot.five_minute_from_s]
        .into_iter()
        .flatten()
        .map(|s| s as f64)
        .chain(points.iter().map(|p| p.0))
        .fold(f64::MAX, f64::min);
    let last = points.iter().map(|p| p.0).fold(f64::MIN, f64::max);
    let up_to = view.up_to_ns.map_or(last + 300.0, |u| u as f64 / 1e9);
    let x1 = up_to.max(last + 300.0);
    let lo = points.iter().map(|p| p.1).fold(f64::MAX, f64::min) * 0.7;
    let hi = points.iter().map(|p| p.1).fold(f64::MIN, f64::max) * 2.5;
    let (ticks, kind) = time_ticks(x0, x1);
    let resumptions: Vec<f64> = view
        .segments
        .iter()
        .filter(|s| s.resumed)
        .map(|s| s.started_ns as f64 / 1e9)
        .filter(|x| (x0..=x1).contains(x))
        .collect();
    let marks: Vec<(f64, &str)> = view
        .marks
        .iter()
        .map(|(at, text)| (*at as f64 / 1e9, text.as_str()))
        .filter(|(x, _)| (x0..=x1).contains(x))
        .collect();
    let worst = view.worst.ever.as_ref();

    let mut data = format!("up_to_s {}\n", up_to.round() as i64);
    for s in &all {
        let _ = writeln!(
            data,
            "# CPU {} maxima per {} s: {} rows, {} row starts per point\nstart_s max_ns",
            s.cpu, s.span_s, s.rows, s.rows_per_point
        );
        for p in &s.points {
            let _ = writeln!(data, "{} {}", p.start_s, p.max_ns);
        }
    }
    for x in &resumptions {
        let _ = writeln!(data, "resumption_s {}", x.round() as i64);
    }
    for (x, text) in &marks {
        let _ = writeln!(data, "mark_s {} {text}", x.round() as i64);
    }
    if let Some(w) = worst {
        let _ = writeln!(data, "worst_ever {} {} {}", w.max_ns, w.at_ns, w.cpu);
    }

    let mut entries: Vec<Entry> = plot
        .five_minute
        .iter()
        .enumerate()
        .map(|(k, s)| Entry {
            name: format!("CPU {}", s.cpu),
            look: cpu_look(k),
            sample: Sample::Line,
        })
        .collect();
    if !resumptions.is_empty() {
        entries.push(Entry {
            name: "monitor resumed".into(),
            look: RESUMED,
            sample: Sample::Line,
        });
    }
    if !marks.is_empty() {
        entries.push(Entry {
            name: "task mark (listed under marks)".into(),
            look: MARK,
            sample: Sample::Line,
        });
    }
    if worst.is_some() {
        entries.push(Entry {
            name: "worst ever".into(),
            look: WORST,
            sample: Sample::Marked,
        });
    }
    let lh = legend_height(&entries);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + lh)).into_drawing_area();
        let mut c = chart(&root, x0..x1, (lo..hi).log_scale(), 72, lh)?;
        c.configure_mesh()
            .max_light_lines(0)
            .bold_line_style(BLACK.mix(0.12))
            .x_desc("time (UTC)")
            .y_desc(format!(
                "{}, max per 5 minutes (µs, log scale)",
                shown(&view.metric)
            ))
            .x_labels(0)
            .y_labels(0)
            // A log axis keeps a key point of its own whatever the count
            // asked: it gets no label (the ticks are drawn below).
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|_| String::new())
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(drawing)?;
        // The axes' ticks, drawn here (plotters puts a time axis' on
        // round numbers of seconds, and a log axis' sparsely): a grid line,
        // a tick mark and a label each; the time on whole UTC times, the
        // latency at 1, 2 and 5 times a power of ten.
        let tick_label = |h: HPos, v: VPos| (FONT, 13).into_text_style(&root).pos(Pos::new(h, v));
        for &v in &value_ticks(lo, hi) {
            grid(&mut c, vec![(x0, v), (x1, v)])?;
            let (px, py) = c.backend_coord(&(x0, v));
            root.draw(&PathElement::new(
                vec![(px - 5, py), (px, py)],
                BLACK.stroke_width(1),
            ))
            .map_err(drawing)?;
            root.draw(&Text::new(
                num(v),
                (px - 8, py),
                tick_label(HPos::Right, VPos::Center),
            ))
            .map_err(drawing)?;
        }
        let below = |h: HPos| tick_label(h, VPos::Top);
        for &t in &ticks {
            grid(&mut c, vec![(t, lo), (t, hi)])?;
            let (px, py) = c.backend_coord(&(t, lo));
            root.draw(&PathElement::new(
                vec![(px, py), (px, py + 5)],
                BLACK.stroke_width(1),
            ))
            .map_err(drawing)?;
            let label = time_label(t, kind);
            // About 7 px a character: a label that would cross the
            // drawing's edge ends (or starts) at its tick instead.
            let half = 7 * label.chars().count() as i32 / 2;
            let h = if px + half > WIDTH as i32 - 2 {
                HPos::Right
            } else if px - half < 2 {
                HPos::Left
            } else {
                HPos::Center
            };
            root.draw(&Text::new(label, (px, py + 8), below(h)))
                .map_err(drawing)?;
        }
        let text = |h: HPos| {
            (FONT, 12)
                .into_text_style(&root)
                .pos(Pos::new(h, VPos::Bottom))
        };
        let first_five = plot.five_minute_from_s;
        if let Some(first) = first_five.filter(|_| !plot.hourly.is_empty()) {
            let x = first as f64;
            line(&mut c, RESOLUTION, vec![(x, lo), (x, hi)])?;
            let (px, py) = c.backend_coord(&(x, hi));
            root.draw(&Text::new(
                "hourly | 5-minute maxima".to_string(),
                (px, py + 16),
                text(HPos::Center),
            ))
            .map_err(drawing)?;
        }
        for &x in &resumptions {
            line(&mut c, RESUMED, vec![(x, lo), (x, hi)])?;
        }
        for &(x, _) in &marks {
            line(&mut c, MARK, vec![(x, lo), (x, hi)])?;
        }
        let cpus: Vec<u32> = plot.five_minute.iter().map(|s| s.cpu).collect();
        for s in &all {
            let k = cpus.iter().position(|&c| c == s.cpu).unwrap_or(cpus.len());
            line(&mut c, cpu_look(k), xy(s))?;
        }
        if let Some(w) = worst {
            let at = (w.at_ns as f64 / 1e9, Axis::Us.value(w.max_ns).max(0.001));
            markers(&mut c, WORST, &[at])?;
            let (px, py) = c.backend_coord(&at);
            let left_half = at.0 < (x0 + x1) / 2.0;
            let label = format!(
                "worst ever {} µs, {} UTC, CPU {}",
                num(Axis::Us.value(w.max_ns)),
                utc(w.at_ns, false)[..16].replacen('T', " ", 1),
                w.cpu
            );
            let (h, dx) = if left_half {
                (HPos::Left, 8)
            } else {
                (HPos::Right, -8)
            };
            root.draw(&Text::new(label, (px + dx, py - 4), text(h)))
                .map_err(drawing)?;
        }
        legend(&root, &entries)?;
        root.present().map_err(drawing)?;
    }
    let mut s = finish("maxima", title, &data, &svg);
    // plotters draws no dashed line: the looks' dashes are put on their
    // strokes (each look's colour is its own).
    for look in [RESUMED, MARK] {
        let RGBColor(r, g, b) = look.colour;
        let stroke = format!("stroke=\"#{r:02X}{g:02X}{b:02X}\"");
        if let Some(d) = look.dash {
            s = s.replace(&stroke, &format!("{stroke} stroke-dasharray=\"{d}\""));
        }
    }
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix seconds of a UTC date and time.
    fn at(t: &str) -> f64 {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .unwrap()
            .unix_timestamp() as f64
    }

    fn labels(x0: &str, x1: &str) -> Vec<String> {
        let (ticks, kind) = time_ticks(at(x0), at(x1));
        ticks.iter().map(|&t| time_label(t, kind)).collect()
    }

    #[test]
    fn the_latency_axis_ticks_are_one_two_five() {
        assert_eq!(value_ticks(7.7, 375.0), [10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(value_ticks(3.0, 30_000.0), [10.0, 100.0, 1_000.0, 10_000.0]);
        // The axis spans at least 0.7 × to 2.5 × its values: 1 to 9 times
        // a power of ten when 1, 2 and 5 give one tick only.
        assert_eq!(value_ticks(11.0, 39.0), [20.0, 30.0]);
    }

    #[test]
    fn the_time_axis_ticks_fall_on_whole_utc_times() {
        assert_eq!(
            labels("2026-11-21T10:17:00Z", "2026-11-21T14:05:00Z"),
            [
                "11-21 10:30",
                "11-21 11:00",
                "11-21 11:30",
                "11-21 12:00",
                "11-21 12:30",
                "11-21 13:00",
                "11-21 13:30",
                "11-21 14:00"
            ]
        );
        assert_eq!(
            labels("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z"),
            [
                "11-01 00:00",
                "11-01 12:00",
                "11-02 00:00",
                "11-02 12:00",
                "11-03 00:00"
            ]
        );
        // A year: the first of every second month.
        assert_eq!(
            labels("2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
            ["2025-01", "2025-03", "2025-05", "2025-07", "2025-09", "2025-11", "2026-01"]
        );
        // Ten years: every second year.
        assert_eq!(
            labels("2020-06-01T00:00:00Z", "2030-06-01T00:00:00Z"),
            ["2022-01", "2024-01", "2026-01", "2028-01", "2030-01"]
        );
    }
}
