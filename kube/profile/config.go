package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/schedq/schedq/kube/internal/yamlnum"
)

// Config is kube-scheduler's configuration, internal version: defaulted
// and validated.
type Config = config.KubeSchedulerConfiguration

// Registry returns kube-scheduler v1.37.2's in-tree registry merged with
// OutOfTree. It fails if a name is in both. PodTopologySpread signs more
// pods than upstream's (spreadSigner); DynamicResources memoises its
// Filter (draMemo), NodeResourcesFit checks a pod's one extended
// resource itself (fitScalar), and NodeResourcesFit and
// NodeResourcesBalancedAllocation keep their PreScore from a pod to the
// next that asks the same (preScoreMemo), each answering as upstream's
// does.
func Registry() (frameworkruntime.Registry, error) {
	r := frameworkplugins.NewInTreeRegistry()
	r[podtopologyspread.Name] = signingSpread(r[podtopologyspread.Name])
	r[dynamicresources.Name] = memoDRA(r[dynamicresources.Name])
	r[noderesources.Name] = scalarFit(r[noderesources.Name])
	r[noderesources.BalancedAllocationName] = memoBalanced(r[noderesources.BalancedAllocationName])
	if err := r.Merge(OutOfTree()); err != nil {
		return nil, err
	}
	return r, nil
}

// Default returns kube-scheduler's default configuration: one profile,
// "default-scheduler", with the default plugins and their default args.
func Default() (*Config, error) {
	return latest.Default()
}

// Load reads the configuration in file: decoded strictly (unknown or
// duplicate fields are errors) and defaulted by kube-scheduler's scheme,
// then validated by its validation and checked against the registry (every
// enabled plugin must exist), and the args of schedq's out-of-tree plugins
// are decoded strictly and validated (OutOfTree), schedq's own settings
// (Schedq) among them, which only the first profile may give. An empty
// file name gives Default. Errors name
// the file and, as upstream gives them, the field paths.
func Load(file string) (*Config, error) {
	if file == "" {
		return Default()
	}
	data, err := readLimited(file, MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	cfg, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return cfg, nil
}

// MaxConfigBytes bounds a configuration file: a real one is a few
// kilobytes, and a path such as /dev/zero must fail, not read for ever.
const MaxConfigBytes = 4 << 20

// readLimited reads file, refusing one of more than max bytes.
func readLimited(file string, max int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than the %d MiB a configuration file may have", file, max>>20)
	}
	return data, nil
}

// Decode decodes, defaults and validates a configuration, as Load does.
func Decode(data []byte) (*Config, error) {
	if err := oneDocument(data); err != nil {
		return nil, err
	}
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, decodeError(data, err)
	}
	cfg, ok := obj.(*Config)
	if !ok {
		return nil, fmt.Errorf("not a KubeSchedulerConfiguration: %s", gvk)
	}
	// The version the file was written in, which validation reads (as
	// kube-scheduler sets it after decoding).
	cfg.APIVersion = gvk.GroupVersion().String()
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, err
	}
	r, err := Registry()
	if err != nil {
		return nil, err
	}
	if errs := checkPluginNames(cfg, r); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if err := checkFitArgs(cfg); err != nil {
		return nil, err
	}
	if errs := append(checkBackoffRange(cfg), checkProfileNames(cfg)...); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if errs := append(checkOutOfTreeArgs(cfg), checkSchedqPlace(cfg)...); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// wantKind is what a configuration file must declare.
const wantKind = "apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration"

// decodeError says what the decoder found wrong without quoting the whole
// file, as its errors for a missing kind or apiVersion do, or the scheme's
// Go source location.
func decodeError(data []byte, err error) error {
	switch {
	case blank(data):
		return fmt.Errorf("empty file (want %s)", wantKind)
	case runtime.IsMissingKind(err):
		return fmt.Errorf("no kind field (want %s)", wantKind)
	case runtime.IsMissingVersion(err):
		return fmt.Errorf("no apiVersion field (want %s)", wantKind)
	case runtime.IsNotRegisteredError(err):
		msg, _, _ := strings.Cut(err.Error(), " in scheme ")
		return fmt.Errorf("%s (want %s)", msg, wantKind)
	case strings.Contains(err.Error(), "json: unsupported value"):
		if where := yamlnum.NonFinite(data); where != "" {
			return errors.New(where)
		}
	}
	return err
}

// oneDocument refuses a file of more than one YAML document: the decoder
// reads the first and ignores the rest. Empty documents and comments do
// not count.
func oneDocument(data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n, i := 0, 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if blank(doc) {
			continue
		}
		if n++; n > 1 {
			return fmt.Errorf("document %d: a second YAML document (after ---); the file holds one KubeSchedulerConfiguration", i)
		}
	}
}

// blank reports whether data holds nothing but blank lines and comments.
func blank(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// checkFitArgs validates NodeResourcesFit's args with upstream's
// validation, which ValidateKubeSchedulerConfiguration skips (it looks
// them up under the name "NodeResourcesFitArgs"); kube-scheduler finds
// the error only when it builds the plugin.
func checkFitArgs(cfg *Config) error {
	var errs []error
	for i := range cfg.Profiles {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			args, ok := pc.Args.(*config.NodeResourcesFitArgs)
			if !ok {
				continue
			}
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			if err := validation.ValidateNodeResourcesFitArgs(path, args); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// maxBackoffSeconds is the longest backoff, in seconds, that a
// time.Duration holds (about 292 years).
const maxBackoffSeconds = math.MaxInt64 / int64(time.Second)

// checkBackoffRange refuses pod backoffs longer than a time.Duration
// holds: upstream's validation bounds them from below only, and as a
// Duration a larger one wraps around to a negative backoff.
func checkBackoffRange(cfg *Config) field.ErrorList {
	var errs field.ErrorList
	for _, b := range []struct {
		name string
		v    int64
	}{{"podInitialBackoffSeconds", cfg.PodInitialBackoffSeconds}, {"podMaxBackoffSeconds", cfg.PodMaxBackoffSeconds}} {
		if b.v > maxBackoffSeconds {
			errs = append(errs, field.Invalid(field.NewPath(b.name), b.v,
				fmt.Sprintf("must be at most %d (about 292 years, the longest duration)", maxBackoffSeconds)))
		}
	}
	return errs
}

// checkProfileNames refuses a profile whose schedulerName no pod can
// carry (spec.schedulerName is a DNS subdomain): upstream's validation
// asks only that it be set, and such a profile would schedule nothing.
func checkProfileNames(cfg *Config) field.ErrorList {
	var errs field.ErrorList
	for i := range cfg.Profiles {
		if msgs := k8svalidation.IsDNS1123Subdomain(cfg.Profiles[i].SchedulerName); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("profiles").Index(i).Child("schedulerName"),
				cfg.Profiles[i].SchedulerName, "can never match a pod's spec.schedulerName: "+msgs[0]))
		}
	}
	return errs
}

// checkPluginNames finds the enabled plugins that are not in r, with
// their field paths. O(plugins).
func checkPluginNames(cfg *Config, r frameworkruntime.Registry) field.ErrorList {
	var errs field.ErrorList
	for i := range cfg.Profiles {
		p := cfg.Profiles[i].Plugins
		if p == nil {
			continue
		}
		path := field.NewPath("profiles").Index(i).Child("plugins")
		v := reflect.ValueOf(p).Elem()
		for f := 0; f < v.NumField(); f++ {
			set, ok := v.Field(f).Interface().(config.PluginSet)
			if !ok {
				continue
			}
			point := v.Type().Field(f).Name
			for j, pl := range set.Enabled {
				if _, ok := r[pl.Name]; !ok {
					errs = append(errs, &field.Error{Type: field.ErrorTypeNotFound, BadValue: pl.Name,
						Field:  path.Child(lowerFirst(point)).Child("enabled").Index(j).Child("name").String(),
						Detail: fmt.Sprintf("%s plugin %q does not exist", point, pl.Name)})
				}
			}
		}
	}
	return errs
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// Settings are the scheduler-wide values a configuration file sets
// itself, before kube-scheduler's defaulting fills them in; nil where the
// file leaves the default.
type Settings struct {
	// PercentageOfNodesToScore is the one profile's, else the file's
	// top-level one, as schedq scheduler applies them: with several
	// profiles, the top-level one is every profile's default, and each
	// profile's own is its framework's (Framework.PercentageOfNodesToScore).
	PercentageOfNodesToScore *int32
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds are the queue's
	// backoff bounds.
	PodInitialBackoffSeconds, PodMaxBackoffSeconds *int64
	// Schedq are schedq's own settings (SchedqSettings), nil without;
	// SchedqPath is their field path in the file.
	Schedq     *SchedqArgs
	SchedqPath string
}

// LoadSettings is Load, and also returns the Settings the file sets
// itself (none without a file): a program whose own options give these
// values too can then tell the file's choice from the default.
func LoadSettings(file string) (*Config, Settings, error) {
	if file == "" {
		cfg, err := Default()
		return cfg, Settings{}, err
	}
	data, err := readLimited(file, MaxConfigBytes)
	if err != nil {
		return nil, Settings{}, err
	}
	cfg, err := Decode(data)
	if err != nil {
		return nil, Settings{}, fmt.Errorf("%s: %w", file, err)
	}
	set, err := explicitSettings(data)
	if err != nil {
		return nil, Settings{}, fmt.Errorf("%s: %w", file, err)
	}
	if set.Schedq, set.SchedqPath, err = SchedqSettings(cfg); err != nil {
		return nil, Settings{}, fmt.Errorf("%s: %w", file, err)
	}
	return cfg, set, nil
}

// explicitSettings decodes data, which Decode accepted, into the v1 type
// without defaulting, and returns the Settings it holds.
func explicitSettings(data []byte) (Settings, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return Settings{}, err
	}
	v, ok := obj.(*configv1.KubeSchedulerConfiguration)
	if !ok {
		return Settings{}, fmt.Errorf("not a %s", wantKind)
	}
	set := Settings{PercentageOfNodesToScore: v.PercentageOfNodesToScore,
		PodInitialBackoffSeconds: v.PodInitialBackoffSeconds, PodMaxBackoffSeconds: v.PodMaxBackoffSeconds}
	if len(v.Profiles) == 1 && v.Profiles[0].PercentageOfNodesToScore != nil {
		set.PercentageOfNodesToScore = v.Profiles[0].PercentageOfNodesToScore
	}
	return set, nil
}

// Unhonoured lists, by field name, what cfg sets that schedq's scheduler
// and simulator do not apply: extenders; clientConnection,
// leaderElection or parallelism other than kube-scheduler's defaults; and
// delayCacheUntilActive (schedq's standby replicas keep their caches warm).
// Each program refuses them, saying what sets them instead.
func Unhonoured(cfg *Config) ([]string, error) {
	def, err := Default()
	if err != nil {
		return nil, err
	}
	var out []string
	if len(cfg.Extenders) > 0 {
		out = append(out, "extenders")
	}
	if !apiequality.Semantic.DeepEqual(cfg.ClientConnection, def.ClientConnection) {
		out = append(out, "clientConnection")
	}
	if !apiequality.Semantic.DeepEqual(cfg.LeaderElection, def.LeaderElection) {
		out = append(out, "leaderElection")
	}
	if cfg.Parallelism != def.Parallelism {
		out = append(out, "parallelism")
	}
	if cfg.DelayCacheUntilActive {
		out = append(out, "delayCacheUntilActive")
	}
	return out, nil
}
