//! `VERBS_LOG_LEVEL` / `VERBS_LOG_FILE` debug output.
