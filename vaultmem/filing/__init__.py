"""The filing contract: routing of kinds to class directories, the daily cap and dedup rules."""
