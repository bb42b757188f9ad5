package cli

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/store/backends"
)

func newStoreCmd(stdio IO) *cobra.Command {
	var settingsFile string
	cmd := &cobra.Command{
		Use:   "store",
		Short: "the session store your settings choose: where it is, and its schema",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, o, err := storeChoice(stdio, settingsFile)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s store at %s\n", cmp.Or(cfg.Store, backends.JSONL), backends.Where(cfg, o))
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&settingsFile, "settings", "", "an extra settings file (its sessionStore picks the store)")
	cmd.AddCommand(&cobra.Command{
		Use:   "migrate",
		Short: "bring the store's schema up to this version of dsh (PostgreSQL; dsh also migrates when it opens the store)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, o, err := storeChoice(stdio, settingsFile)
			if err != nil {
				return err
			}
			msg, err := backends.Migrate(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdio.Out, msg)
			return nil
		},
	})
	return cmd
}
