//! `jitterlab report`'s flags turned into the report's own request: the
//! conversions from clap's types to those of `report::stored` and
//! `report::tables` (which never see clap).

use super::{ReportArgs, ReportFormat, TableArg};
use crate::report::stored::ReportRequest;
use crate::report::tables;

impl ReportArgs {
    /// What the report is asked for.
    pub fn request(&self) -> ReportRequest {
        ReportRequest {
            runs: self.runs.clone(),
            format: self.format.into(),
            baseline: self.baseline.clone(),
            tables: self.tables.iter().map(|&t| t.into()).collect(),
            explain: !self.no_explain,
            output: self.output.clone(),
            junit: self.junit.clone(),
            histogram: self.histogram.clone(),
            follow: self.follow,
            monitor: self.monitor.clone(),
            against: self.against.clone(),
            max_regression: self.max_regression.clone(),
        }
    }
}

impl From<ReportFormat> for tables::Format {
    fn from(f: ReportFormat) -> tables::Format {
        match f {
            ReportFormat::Text => tables::Format::Text,
            ReportFormat::Md => tables::Format::Md,
            ReportFormat::Csv => tables::Format::Csv,
            ReportFormat::Json => tables::Format::Json,
            ReportFormat::Html => tables::Format::Html,
        }
    }
}

impl From<TableArg> for tables::Table {
    fn from(t: TableArg) -> tables::Table {
        match t {
            TableArg::Configurations => tables::Table::Configurations,
            TableArg::Conditions => tables::Table::Conditions,
            TableArg::Latency => tables::Table::Latency,
            TableArg::Chase => tables::Table::Chase,
            TableArg::Kind(name) => tables::Table::Kind(name),
        }
    }
}
