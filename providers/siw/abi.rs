//! placeholder: filled in by the ABI transcription
