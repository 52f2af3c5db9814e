//! A performance lesson's roofline, drawn with plotters as an SVG from the verification record:
//! the GPU's measured bandwidth slope and FMA peak, and where the original, the fix and the library
//! baseline sit.

use anyhow::{anyhow, Result};
use grader::judge::perf::PerfSummary;
use grader::tools::peak::Peak;
use plotters::prelude::*;

const SIZE: (u32, u32) = (720, 420);

/// Okabe and Ito's colours, which readers with any common colour-vision deficiency tell apart; each
/// version also has a shape of its own, so that the chart reads in grey too.
const ROOF: RGBColor = RGBColor(60, 60, 60);
const ORIGINAL: RGBColor = RGBColor(213, 94, 0); // vermillion
const FIX: RGBColor = RGBColor(0, 114, 178); // blue
const LIBRARY: RGBColor = RGBColor(0, 0, 0);

/// The chart as SVG markup; an error where the record has no roofline points.
pub fn svg(perf: &PerfSummary) -> Result<String> {
    let points: Vec<(&str, f64, f64)> = perf
        .versions
        .iter()
        .filter_map(|v| {
            v.roofline
                .as_ref()
                .map(|r| (v.version.as_str(), r.intensity, r.gflops))
        })
        .collect();
    if points.is_empty() {
        return Err(anyhow!(
            "the record has no roofline point for this exercise"
        ));
    }
    let peak = &perf.peak;
    let (lo_x, hi_x) = points
        .iter()
        .fold((peak.ridge(), peak.ridge()), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let (x0, x1) = (lo_x / 4.0, hi_x * 4.0);
    let lo_y = points
        .iter()
        .map(|p| p.2)
        .fold(peak.roof_gflops(x0), f64::min);
    let (y0, y1) = (lo_y / 3.0, peak.fma_ncu_gflops * 2.0);
    chart_svg(
        &format!("Roofline of the {} (measured)", peak.device),
        peak,
        ((x0, x1), (y0, y1)),
        |chart| draw_points(chart, &points),
    )
}

/// An exercise's number, where its untouched file sits and where its fix does (intensity, GFLOP/s).
type Move<'a> = (&'a str, (f64, f64), (f64, f64));

/// Every kernel-clocked performance exercise of a record on one chart (the primer's): each
/// untouched exercise (a circle) and its fix (a triangle), labelled with the exercise's number and
/// joined by a line, under the GPU's roof. `exercises`: (id, summary) of the record, in its order.
pub fn svg_all(exercises: &[(&str, &PerfSummary)]) -> Result<String> {
    let mut pairs: Vec<Move> = exercises
        .iter()
        .filter_map(|(id, perf)| {
            let at = |name: &str| {
                let r = perf.version(name)?.roofline.as_ref()?;
                Some((r.intensity, r.gflops))
            };
            let number = id.split('-').next().unwrap_or(id);
            Some((number, at("original")?, at("reference")?))
        })
        .collect();
    let Some((_, first)) = exercises.first() else {
        return Err(anyhow!("the record has no performance exercise"));
    };
    if pairs.is_empty() {
        return Err(anyhow!("the record has no roofline point"));
    }
    pairs.sort_by(|a, b| a.2 .0.total_cmp(&b.2 .0));
    let peak = &first.peak;
    let xs = pairs.iter().flat_map(|(_, o, f)| [o.0, f.0]);
    let (lo_x, hi_x) = xs.fold((peak.ridge(), peak.ridge()), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (x0, x1) = (lo_x / 2.0, hi_x * 2.0);
    let lo_y = pairs
        .iter()
        .flat_map(|(_, o, f)| [o.1, f.1])
        .fold(peak.roof_gflops(x0), f64::min);
    let (y0, y1) = (lo_y / 2.0, peak.fma_ncu_gflops * 2.0);
    chart_svg(
        &format!(
            "The kernel-timed exercises on the {} (measured)",
            peak.device
        ),
        peak,
        ((x0, x1), (y0, y1)),
        |chart| draw_moves(chart, &pairs),
    )
}

/// Each exercise's move on the chart: its untouched file (a circle) joined to its fix (a triangle,
/// labelled with the exercise's number), and the legend's two shapes, once.
fn draw_moves<'a>(chart: &mut Chart<'a, 'a>, pairs: &[Move]) -> Result<()> {
    // Fixes that land close together (a cluster of memory-bound ones) get their numbers on
    // alternating sides, so that neighbours' labels do not print over each other.
    const SIDES: [(i32, i32); 4] = [(6, -16), (6, 2), (-24, -16), (-24, 2)];
    for (k, (number, original, fix)) in pairs.iter().enumerate() {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![*original, *fix],
                FIX.mix(0.5).stroke_width(1),
            )))
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(*original) + Circle::new((0, 0), 5, ORIGINAL.filled()),
            ))
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(*fix)
                    + TriangleMarker::new((0, 0), 7, FIX.filled())
                    + Text::new(number.to_string(), SIDES[k % 4], ("sans-serif", 15)),
            ))
            .map_err(|e| anyhow!("{e}"))?;
    }
    // The legend's two shapes, once.
    chart
        .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
        .map_err(|e| anyhow!("{e}"))?
        .label("the untouched exercise")
        .legend(|(x, y)| EmptyElement::at((x + 10, y)) + Circle::new((0, 0), 5, ORIGINAL.filled()));
    chart
        .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
        .map_err(|e| anyhow!("{e}"))?
        .label("its reference fix (the exercise's number)")
        .legend(|(x, y)| {
            EmptyElement::at((x + 10, y)) + TriangleMarker::new((0, 0), 7, FIX.filled())
        });
    Ok(())
}

/// An SVG chart of `caption` with logarithmic axes over `ranges`, the GPU's roof, what `draw`
/// puts on it, and the legend of its labelled series.
fn chart_svg(
    caption: &str,
    peak: &Peak,
    ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64)),
    draw: impl for<'a> FnOnce(&mut Chart<'a, 'a>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(|e| anyhow!("{e}"))?;
        draw_axes(&mut chart)?;
        draw_roof(&mut chart, peak, (x0, x1))?;
        draw(&mut chart)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", 16))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(out)
}

/// A chart with logarithmic axes: arithmetic intensity across, GFLOP/s up.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

fn draw_axes(chart: &mut Chart) -> Result<()> {
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        // plotters draws text at 0.8 of the size asked: 17 is about 14 px.
        .label_style(("sans-serif", 17))
        .axis_desc_style(("sans-serif", 17))
        .y_labels(8)
        .x_desc("arithmetic intensity (FLOP per DRAM byte)")
        .y_desc("GFLOP/s")
        .x_label_formatter(&|x| {
            format!("{x:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// The roof from `x0` to `x1`: the bandwidth slope, then the FMA peak, named in the legend.
fn draw_roof(chart: &mut Chart, peak: &Peak, (x0, x1): (f64, f64)) -> Result<()> {
    let steps = 200;
    let roof = (0..=steps).map(|i| {
        let x = x0 * (x1 / x0).powf(i as f64 / steps as f64);
        (x, peak.roof_gflops(x))
    });
    chart
        .draw_series(LineSeries::new(roof, ROOF.stroke_width(2)))
        .map_err(|e| anyhow!("{e}"))?
        .label(format!(
            "memcpy {:.0} GB/s, fp32 FMA {:.1} TFLOP/s (ncu clocks)",
            peak.memcpy_gbps,
            peak.fma_ncu_gflops / 1e3
        ))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], ROOF.stroke_width(2)));
    Ok(())
}

/// Each version where it sits (intensity, GFLOP/s), marked by its shape and named.
fn draw_points(chart: &mut Chart, points: &[(&str, f64, f64)]) -> Result<()> {
    for (name, x, y) in points {
        let label = match *name {
            "reference" => "the fix".to_string(),
            other => other.to_string(),
        };
        let at = EmptyElement::at((*x, *y));
        let text = Text::new(label, (10, -20), ("sans-serif", 17));
        // The original a circle, the fix a triangle, a library a cross.
        let drawn = match *name {
            "original" => chart.draw_series(std::iter::once(
                at + Circle::new((0, 0), 7, ORIGINAL.filled()) + text,
            )),
            "reference" => chart.draw_series(std::iter::once(
                at + TriangleMarker::new((0, 0), 9, FIX.filled()) + text,
            )),
            _ => chart.draw_series(std::iter::once(
                at + Cross::new((0, 0), 7, LIBRARY.stroke_width(3)) + text,
            )),
        };
        drawn.map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use grader::exercise::manifest::Clock;
    use grader::plans::verify::VerificationRecord;

    #[test]
    fn the_primer_chart_has_every_kernel_timed_exercise_and_no_call_timed_one() {
        let record: VerificationRecord = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../verification.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let all: Vec<(&str, &PerfSummary)> = record
            .exercises
            .iter()
            .filter_map(|r| Some((r.id.as_str(), r.perf.as_ref()?)))
            .filter(|(_, p)| p.clock == Clock::Kernel)
            .collect();
        let svg = svg_all(&all).unwrap();
        let drawn: Vec<&str> = all
            .iter()
            .filter(|(_, p)| {
                ["original", "reference"]
                    .iter()
                    .all(|v| p.version(v).is_some_and(|v| v.roofline.is_some()))
            })
            .map(|(id, _)| id.split('-').next().unwrap())
            .collect();
        assert!(drawn.len() >= 10, "{drawn:?}");
        for number in &drawn {
            assert!(
                svg.contains(&format!(">{number}<")) || svg.contains(&format!(">\n{number}\n<")),
                "{number}"
            );
        }
        // One triangle a fix, one circle an untouched exercise, and the legend's one of each.
        assert_eq!(svg.matches("<polygon").count(), drawn.len() + 1);
        assert_eq!(svg.matches("<circle").count(), drawn.len() + 1);
        assert!(
            !svg.contains(">62<") && !svg.contains(">63<"),
            "call-timed exercises have no place here"
        );
        assert!(svg_all(&[]).is_err());
    }
}
