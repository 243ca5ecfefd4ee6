"""The rule tables traceview ships (TOML files in this folder): what each kind of task is, its
compute class, the findings, the devices' peaks."""
