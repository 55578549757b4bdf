package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config builds the client configuration, finding it as kubectl does:
//
//  1. kubeconfig (the --kubeconfig flag), if not empty: that file, which
//     must exist;
//  2. otherwise the files listed in $KUBECONFIG (a path list, merged as
//     kubectl merges them; missing files are skipped);
//  3. otherwise ~/.kube/config;
//  4. if that gives no configuration: the in-cluster configuration (the
//     pod's service account), when running in a cluster.
//
// The error names what was tried.
func Config(kubeconfig string) (*rest.Config, error) {
	return configFrom(kubeconfig, clientcmd.RecommendedHomeFile)
}

// configFrom is Config with the home file (~/.kube/config) given, so that
// tests need not touch the real one.
func configFrom(kubeconfig, homeFile string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // reads $KUBECONFIG
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		rules.Precedence = []string{homeFile}
	}
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		rules.ExplicitPath = kubeconfig
	}
	if err := kubeconfigFiles(kubeconfig, homeFile); err != nil {
		return nil, err
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no cluster configuration in %s, and not running in a cluster (%v)",
			sources(kubeconfig, rules), inClusterErr())
	default:
		return nil, fmt.Errorf("%s: %w", sources(kubeconfig, rules), err)
	}
}

// kubeconfigFiles refuses a kubeconfig file that Config would read
// (kubeconfig if given, else each file of $KUBECONFIG, else homeFile)
// and that is not a regular file or is larger than MaxInputFileBytes
// (checkInputFile): client-go would read /dev/zero for ever. Each error
// names where the file was given. O(files).
func kubeconfigFiles(kubeconfig, homeFile string) error {
	check := func(source, path string) error {
		if err := checkInputFile(path, MaxInputFileBytes); err != nil {
			return fmt.Errorf("%s%s: %w", source, path, err)
		}
		return nil
	}
	if kubeconfig != "" {
		return check("--kubeconfig ", kubeconfig)
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		var errs []error
		for _, p := range filepath.SplitList(env) {
			if p != "" {
				errs = append(errs, check("$"+clientcmd.RecommendedConfigPathEnvVar+" ", p))
			}
		}
		return errors.Join(errs...)
	}
	return check("", homeFile)
}

// sources says where the configuration was looked for.
func sources(kubeconfig string, rules *clientcmd.ClientConfigLoadingRules) string {
	if kubeconfig != "" {
		return "--kubeconfig " + kubeconfig
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		return fmt.Sprintf("$%s (%s)", clientcmd.RecommendedConfigPathEnvVar,
			strings.Join(rules.Precedence, string(filepath.ListSeparator)))
	}
	return strings.Join(rules.Precedence, ", ") + " (no --kubeconfig, no $KUBECONFIG)"
}

// inClusterErr says why the in-cluster configuration is unavailable.
func inClusterErr() error {
	if _, err := rest.InClusterConfig(); err != nil {
		return err
	}
	return errors.New("in-cluster configuration unusable")
}
