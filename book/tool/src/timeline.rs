//! A call-clocked lesson's timeline, drawn with plotters as an SVG from the verification record:
//! one call of the original and one of the fix, on the same time scale, a lane for the host's
//! calls and one per stream for what the GPU ran (copies, kernels, graphs, memsets), as the
//! harness recorded them (harness/timeline.cuh).

use anyhow::{anyhow, Result};
use grader::judge::perf::PerfSummary;
use grader::tools::timeline::{Call, OpKind};
use plotters::prelude::*;

const WIDTH: u32 = 760;
const LANE_PX: u32 = 26;

fn colour(kind: OpKind) -> RGBColor {
    match kind {
        OpKind::Kernel => RGBColor(46, 139, 87),
        OpKind::Graph => RGBColor(128, 80, 160),
        OpKind::H2d => RGBColor(52, 101, 164),
        OpKind::D2h => RGBColor(230, 140, 30),
        OpKind::D2d | OpKind::H2h | OpKind::Memset => RGBColor(150, 150, 150),
        OpKind::Sync => RGBColor(200, 60, 60),
        OpKind::Alloc | OpKind::Free => RGBColor(120, 120, 120),
    }
}

/// The lanes of a call: the host first, then each stream the GPU ran work in.
fn lanes(call: &Call) -> Vec<Option<u32>> {
    let mut streams: Vec<u32> = call
        .ops
        .iter()
        .filter(|o| o.gpu.is_some())
        .map(|o| o.stream)
        .collect();
    streams.sort_unstable();
    streams.dedup();
    std::iter::once(None)
        .chain(streams.into_iter().map(Some))
        .collect()
}

/// The chart; an error where the record holds no timeline of the original or of the fix.
pub fn svg(perf: &PerfSummary) -> Result<String> {
    let shown: Vec<(&str, &Call)> = ["original", "reference"]
        .iter()
        .filter_map(|n| {
            perf.version(n)
                .and_then(|v| v.timeline.as_ref())
                .map(|t| (*n, t))
        })
        .collect();
    if shown.len() < 2 {
        return Err(anyhow!(
            "the record has no timeline of the original and the fix: run `verify` on a GPU"
        ));
    }
    let span_us = shown.iter().map(|(_, c)| c.wall_ns).fold(0.0, f64::max) / 1e3;
    let heights: Vec<u32> = shown
        .iter()
        .map(|(_, c)| 84 + LANE_PX * lanes(c).len() as u32)
        .collect();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, heights.iter().sum::<u32>() + 30))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let (legend, mut rest) = root.split_vertically(30);
        draw_legend(&legend)?;
        for ((name, call), h) in shown.iter().zip(&heights) {
            let (area, below) = rest.split_vertically(*h);
            rest = below;
            draw_call(&area, name, call, span_us)?;
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The colours of the kinds of work, in a row along the top.
fn draw_legend(legend: &Area) -> Result<()> {
    let mut x = 10;
    for (kind, what) in [
        (OpKind::H2d, "copy to GPU"),
        (OpKind::Kernel, "kernel"),
        (OpKind::Graph, "graph"),
        (OpKind::D2h, "copy to host"),
        (OpKind::Sync, "host waits"),
        (OpKind::Alloc, "malloc/free"),
    ] {
        legend
            .draw(&Rectangle::new(
                [(x, 10), (x + 14, 22)],
                colour(kind).filled(),
            ))
            .map_err(|e| anyhow!("{e}"))?;
        legend
            .draw(&Text::new(what, (x + 18, 10), ("sans-serif", 13)))
            .map_err(|e| anyhow!("{e}"))?;
        x += 22 + 8 * what.len() as i32;
    }
    Ok(())
}

/// The name of lane `i` from the top.
fn lane_label(lanes: &[Option<u32>], i: usize) -> String {
    match lanes.get(i) {
        Some(None) => "host".to_string(),
        Some(Some(0)) => "default stream".to_string(),
        Some(Some(s)) => format!("stream {s}"),
        None => String::new(),
    }
}

/// One call (`name`: the original or the reference) in `area`: its lanes named on the y axis, time on
/// the x axis up to `span_us` (the longer call's), and a box for each op.
fn draw_call(area: &Area, name: &str, call: &Call, span_us: f64) -> Result<()> {
    let lanes = lanes(call);
    let title = format!(
        "{}: one call, {:.0} us",
        if name == "reference" { "the fix" } else { name },
        call.wall_ns / 1e3
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(6)
        .x_label_area_size(36)
        .y_label_area_size(100)
        .build_cartesian_2d(0.0..span_us, 0.0..lanes.len() as f64)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .x_desc("microseconds from the start of the call")
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(lanes.len() * 2 + 1)
        .y_label_formatter(&|y| {
            let frac = y - y.floor();
            if (frac - 0.5).abs() < 0.01 {
                lane_label(&lanes, lanes.len() - 1 - y.floor() as usize)
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .draw_series(op_boxes(call, &lanes, span_us))
        .map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// Each op's boxes: the host's time in its API call on the host lane and, for work the GPU ran,
/// the GPU's time on its stream's lane. A box is at least 1/800 of the span wide, to be seen.
fn op_boxes<'a>(
    call: &'a Call,
    lanes: &'a [Option<u32>],
    span_us: f64,
) -> impl Iterator<Item = Rectangle<(f64, f64)>> + 'a {
    // Lane i from the top is the band [n - 1 - i, n - i], drawn a little inside it.
    let band = |lane: usize| {
        let top = (lanes.len() - lane) as f64;
        (top - 0.15, top - 0.85)
    };
    call.ops.iter().flat_map(move |op| {
        let host = {
            let (y0, y1) = band(0);
            let (a, b) = (
                op.host.0 / 1e3,
                (op.host.1 / 1e3).max(op.host.0 / 1e3 + span_us / 800.0),
            );
            // The host inside each API call, in the colour of what it asked for: a launch
            // takes microseconds, a blocking copy or a sync as long as the GPU does.
            let shade = if op.gpu.is_some() {
                colour(op.kind).mix(0.45)
            } else {
                colour(op.kind).mix(0.9)
            };
            Rectangle::new([(a, y0), (b, y1)], shade.filled())
        };
        let gpu = op.gpu.map(|(g0, g1)| {
            let lane = lanes
                .iter()
                .position(|l| *l == Some(op.stream))
                .unwrap_or(0);
            let (y0, y1) = band(lane);
            Rectangle::new(
                [
                    (g0 / 1e3, y0),
                    ((g1 / 1e3).max(g0 / 1e3 + span_us / 800.0), y1),
                ],
                colour(op.kind).filled(),
            )
        });
        std::iter::once(host).chain(gpu)
    })
}
