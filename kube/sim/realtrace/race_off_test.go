//go:build !race

package realtrace

// raceDetector is true in tests built with -race.
const raceDetector = false
