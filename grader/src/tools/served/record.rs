//! The clock's record of one timed process (the driver's `clock` file), and the calls the judge
//! reads from it.

/// What the grader's clock recorded of one timed process (the driver's `clock` file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTimes {
    /// Each call on the grader's clock.
    pub calls_ns: Vec<f64>,
    /// Each call's CPU time, every process of the run (None where the run had no cgroup).
    pub cpu_ns: Vec<Option<f64>>,
    /// Whether each call's outputs changed after it said it was done.
    pub changed: Vec<bool>,
    /// The call made for the timeline after those (`Calls::recorded`): the judge reads none of it.
    pub recorded_ns: Option<f64>,
    /// The most device memory in use, as the program reported it (asks a person to look, no more).
    pub gpu_memory: Option<f64>,
    /// The persisting-L2 limit the program's context started with, as the program reported it.
    pub l2_found: Option<u64>,
    /// From the start of the process until it was ready for its first call.
    pub ready_ns: Option<f64>,
    /// Why the calls stopped before the last, if they did.
    pub failure: Option<String>,
}

impl CallTimes {
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        if let Some(r) = self.ready_ns {
            t.push_str(&format!("ready-ns {r:.0}\n"));
        }
        if let Some(l2) = self.l2_found {
            t.push_str(&format!("l2 {l2}\n"));
        }
        if let Some(m) = self.gpu_memory {
            t.push_str(&format!("gpu-memory {m:.0}\n"));
        }
        for (i, wall) in self.calls_ns.iter().enumerate() {
            let cpu = self
                .cpu_ns
                .get(i)
                .copied()
                .flatten()
                .map_or("-".to_string(), |c| format!("{c:.0}"));
            t.push_str(&format!(
                "call {} {wall:.0} {cpu} {}\n",
                i + 1,
                u8::from(self.changed.get(i).copied().unwrap_or(false))
            ));
        }
        if let Some(r) = self.recorded_ns {
            t.push_str(&format!("recorded-ns {r:.0}\n"));
        }
        if let Some(f) = &self.failure {
            t.push_str(&format!("failure {}\n", f.replace('\n', " ")));
        }
        t
    }

    /// The driver's `clock` file; None where it is not one.
    pub fn parse(text: &str) -> Option<CallTimes> {
        let mut t = CallTimes::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "ready-ns" => t.ready_ns = Some(rest.trim().parse().ok()?),
                "l2" => t.l2_found = Some(rest.trim().parse().ok()?),
                "gpu-memory" => t.gpu_memory = Some(rest.trim().parse().ok()?),
                "recorded-ns" => t.recorded_ns = Some(rest.trim().parse().ok()?),
                "failure" => t.failure = Some(rest.to_string()),
                "call" => {
                    let f: Vec<&str> = rest.split_whitespace().collect();
                    let [n, wall, cpu, changed] = f[..] else {
                        return None;
                    };
                    if n.parse::<usize>().ok()? != t.calls_ns.len() + 1 {
                        return None;
                    }
                    t.calls_ns.push(wall.parse().ok()?);
                    t.cpu_ns.push(if cpu == "-" {
                        None
                    } else {
                        Some(cpu.parse().ok()?)
                    });
                    t.changed.push(changed == "1");
                }
                _ => return None,
            }
        }
        Some(t)
    }

    /// The call the judge holds a version to: the fastest after the first (which loads the
    /// kernels). Every call's inputs differ and every call was checked.
    pub fn judged_ns(&self) -> Option<f64> {
        after_first(&self.calls_ns).iter().copied().reduce(f64::min)
    }

    /// The slowest judged call after the first against the quickest (None for fewer than two).
    pub fn spread(&self) -> Option<f64> {
        let rest = Some(after_first(&self.calls_ns)).filter(|r| r.len() >= 2)?;
        let (lo, hi) = rest.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        });
        (lo > 0.0).then_some(hi / lo)
    }

    /// The least CPU time of a call after the first.
    pub fn judged_cpu_ns(&self) -> Option<f64> {
        after_first(&self.cpu_ns)
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>()?
            .into_iter()
            .reduce(f64::min)
    }

    /// Every call the process made, the recorded one included.
    pub fn total_ns(&self) -> f64 {
        self.calls_ns.iter().sum::<f64>() + self.recorded_ns.unwrap_or(0.0)
    }
}

/// The calls the judge reads: those after the first (which loads the kernels), or the only one.
fn after_first<T>(calls: &[T]) -> &[T] {
    calls
        .get(1..)
        .filter(|rest| !rest.is_empty())
        .unwrap_or(calls)
}
